package par

import (
	"context"
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

// Gather hands every call's result to add, one at a time (run with
// -race: add needs no lock of its own).
func TestGather(t *testing.T) {
	sum := 0
	Gather(4, 100, func(i int) int { return i }, func(v int) { sum += v })
	if sum != 4950 {
		t.Fatalf("sum of gathered results = %d, want 4950", sum)
	}
}

// Set, Lists and Memo are used from many goroutines at once (run with
// -race): adds are all seen, a memo computes each key once.
func TestContainers(t *testing.T) {
	var s Set[int]
	var l Lists[string, int]
	var calls atomic.Int32
	m := NewMemo(func(k int) (int, error) {
		calls.Add(1) // 20 callers of each key, 8 at once: most overlap with it
		return k * 2, nil
	})
	Each(8, 200, func(i int) {
		s.Add(i % 50)
		l.Add("k", i)
		m.Start(i % 10)
		if v, err := m.Get(context.Background(), i%10); err != nil || v != i%10*2 {
			t.Errorf("memo of %d = %d, %v", i%10, v, err)
		}
	})
	for i := range 50 {
		if !s.Has(i) {
			t.Fatalf("set lost %d", i)
		}
	}
	if s.Has(50) || l.Has("other") {
		t.Fatal("set or lists hold what was never added")
	}
	if got := l.Get("k"); len(got) != 200 {
		t.Fatalf("lists hold %d values, want 200", len(got))
	}
	if l.Drop("k"); l.Has("k") {
		t.Fatal("a dropped list is still there")
	}
	if n := calls.Load(); n != 10 {
		t.Fatalf("memo computed %d times for 10 keys", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stop := make(chan struct{})
	defer close(stop)
	block := NewMemo(func(int) (int, error) { <-stop; return 0, nil })
	if _, err := block.Get(ctx, 1); err != context.Canceled {
		t.Fatalf("Get on an ended context = %v", err)
	}
}
