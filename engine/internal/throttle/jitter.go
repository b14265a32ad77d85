package throttle

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jitter waits before retry number attempt of a lost compare-and-swap:
// 10 ms plus up to 20 ms per attempt so far, at most a second, or until
// ctx ends.
func Jitter(ctx context.Context, attempt int) {
	d := min(time.Duration(10+rand.IntN(20*(attempt+1)))*time.Millisecond, time.Second)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
