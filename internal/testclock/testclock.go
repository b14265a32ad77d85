// Package testclock is a clock a test moves forward: the real time plus
// an offset the test advances. The engine reads it for every time it
// records and compares (timers, sleeps, retry backoffs, deadlines, lease
// expiries), so a sleep of an hour passes in a moment, while the pace of
// what runs between advances (heartbeats, request bounds) stays real.
// `cairn dev --test-clock` and sdk/sdktest serve one.
package testclock

import (
	"sync/atomic"
	"time"
)

// MaxOffset bounds how far a clock may be moved in all (a century).
const MaxOffset = 100 * 365 * 24 * time.Hour

// Clock is a moved clock. The zero value is the real time.
type Clock struct{ offset atomic.Int64 }

// Now is the real time plus the offset.
func (c *Clock) Now() time.Time { return time.Now().Add(c.Offset()) }

// Offset is how far the clock has been moved.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Advance moves the clock d forward and returns the new time. A clock
// never goes back (d ≤ 0 moves nothing), and the offset stops at
// MaxOffset.
func (c *Clock) Advance(d time.Duration) time.Time {
	for d > 0 {
		cur := c.offset.Load()
		next := min(cur+min(int64(d), int64(MaxOffset)), int64(MaxOffset))
		if c.offset.CompareAndSwap(cur, next) {
			break
		}
	}
	return c.Now()
}
