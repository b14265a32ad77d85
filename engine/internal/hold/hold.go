// Package hold holds a request open: a claim waiting for work, a status
// request waiting for a change. Holds are wall-clock waits of the
// request, not engine time, so they use the real clock; each ends at its
// deadline, when the instance drains, or when the request's context ends.
package hold

import (
	"context"
	"time"
)

// Until is when a request asking to be held for wait must answer: wait
// capped at max, leaving half a second to answer before the platform's
// own deadline (ctx's).
func Until(ctx context.Context, wait, max time.Duration) time.Time {
	wait = min(wait, max)
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - 500*time.Millisecond; left < wait {
			wait = maxZero(left)
		}
	}
	return time.Now().Add(wait)
}

func maxZero(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// Await holds until wake says there may be work, or for at most every
// (the caller's next look of its own); false when the hold is over: the
// deadline passed, draining closed, or ctx ended.
func Await(ctx context.Context, wake <-chan struct{}, deadline time.Time, every time.Duration, draining <-chan struct{}) bool {
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(min(left, every))
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-draining:
		return false
	case <-ctx.Done():
		return false
	}
	return true
}

// Sleep waits d, or until the deadline, draining or ctx; it reports
// whether the hold should go on.
func Sleep(ctx context.Context, d time.Duration, deadline time.Time, draining <-chan struct{}) bool {
	if left := time.Until(deadline); left < d {
		d = left
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return time.Now().Before(deadline)
	case <-draining:
		return false
	case <-ctx.Done():
		return false
	}
}
