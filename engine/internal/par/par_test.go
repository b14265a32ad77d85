package par

import (
	"sync/atomic"
	"testing"
	"time"
)

// Every index runs once, never more than n at once, and Each returns
// only when all have returned.
func TestEach(t *testing.T) {
	const n, count = 3, 50
	var running, most, done atomic.Int32
	seen := make([]atomic.Int32, count)
	Each(n, count, func(i int) {
		now := running.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		seen[i].Add(1)
		time.Sleep(time.Millisecond) // let the calls overlap
		running.Add(-1)
		done.Add(1)
	})
	if done.Load() != count {
		t.Fatalf("Each returned after %d of %d calls", done.Load(), count)
	}
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("index %d ran %d times", i, seen[i].Load())
		}
	}
	if most.Load() > n || most.Load() < 2 {
		t.Fatalf("%d ran at once, want between 2 and %d", most.Load(), n)
	}
}
