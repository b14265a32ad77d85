package throttle

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Outage summarises store failures seen by the claim path: the first
// failure of an outage is logged (WARN), the rest are counted, and the
// recovery is logged once with the count and the duration. An outage
// costs a few log lines per instance, not one per request.
type Outage struct {
	Log *slog.Logger
	Now func() time.Time

	mu     sync.Mutex
	since  time.Time // zero: the store answers
	failed int
}

// Fail counts a failure of op what.
func (o *Outage) Fail(what string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed++
	if o.since.IsZero() {
		o.since = o.Now()
		o.Log.Warn("the store is failing; waiting claims back off until it answers", "op", what, "err", err)
		return
	}
	o.Log.Debug("store still failing", "op", what, "err", err, "failures", o.failed)
}

// OK notes that the store answered.
func (o *Outage) OK() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return
	}
	o.Log.Info("the store answers again", "failures", o.failed, "after", o.Now().Sub(o.since).Round(time.Millisecond))
	o.since, o.failed = time.Time{}, 0
}

// ClaimBackoff is how long a claim waits after its n-th consecutive
// store failure before it tries the bucket again: 50 ms doubling to 5 s,
// jittered, so an outage costs a few reads per second per instance
// instead of a tight loop of failing reads.
func ClaimBackoff(n int) time.Duration {
	d := 50 * time.Millisecond << min(n-1, 7)
	d = min(d, 5*time.Second)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
