package sim

import (
	"context"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/ctxsleep"
)

// ScaledClock is simulated time running Factor times faster than the wall
// clock from a start instant: Now = Start + Factor × (wall time since the
// clock was made), and Sleep(d) waits d/Factor of wall time. Every
// goroutine sees the same time without coordination, which is what lets
// the real engine, with its own goroutines, run on it.
type ScaledClock struct {
	start  time.Time
	wall0  time.Time
	factor float64
}

// NewScaledClock returns a clock at start running factor times faster
// than the wall clock (factor ≤ 0 means 1).
func NewScaledClock(start time.Time, factor float64) *ScaledClock {
	if factor <= 0 {
		factor = 1
	}
	return &ScaledClock{start: start, wall0: time.Now(), factor: factor}
}

// Factor is simulated seconds per wall second.
func (c *ScaledClock) Factor() float64 { return c.factor }

// Now is the simulated time.
func (c *ScaledClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.wall0)) * c.factor))
}

// Wall converts a simulated duration to wall time.
func (c *ScaledClock) Wall(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.factor)
}

// Sleep waits the simulated duration d, or until ctx ends.
func (c *ScaledClock) Sleep(ctx context.Context, d time.Duration) error {
	return ctxsleep.Sleep(ctx, c.Wall(d))
}

// ManualClock is time that moves only when told to; Sleep returns at once
// (latency is not simulated on it). For tests of the limits.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock stopped at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now is the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Sleep returns at once unless ctx has ended.
func (c *ManualClock) Sleep(ctx context.Context, d time.Duration) error { return ctx.Err() }
