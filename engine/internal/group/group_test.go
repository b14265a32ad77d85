package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
)

// recorder is a Write that remembers every entry written, by key, and
// checks that two batches of one key that are not full are never in
// flight together.
type recorder struct {
	mu       sync.Mutex
	written  map[string]int // entry → times written
	writes   int
	inFlight map[string]int
	overlap  int
	max      int
	delay    time.Duration
	fail     error
}

func (r *recorder) write(ctx context.Context, key string, batch []string) error {
	partial := len(batch) < r.max
	r.mu.Lock()
	if partial {
		r.inFlight[key]++
		if r.inFlight[key] > 1 {
			r.overlap++
		}
	}
	r.mu.Unlock()
	<-time.After(r.delay) // the store's latency
	r.mu.Lock()
	defer r.mu.Unlock()
	if partial {
		r.inFlight[key]--
	}
	if len(batch) > r.max {
		return fmt.Errorf("batch of %d over max %d", len(batch), r.max)
	}
	if r.fail != nil {
		return r.fail
	}
	r.writes++
	for _, e := range batch {
		r.written[e]++
	}
	return nil
}

func (r *recorder) has(e string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written[e] == 1
}

// Many callers on a few keys: every entry is written exactly once,
// before its Add returns; batches respect Max; a key has one write in
// flight at a time (but for full batches); and grouping happens: far
// fewer writes than entries.
func TestAddRace(t *testing.T) {
	rec := &recorder{written: map[string]int{}, inFlight: map[string]int{}, max: 16, delay: 2 * time.Millisecond}
	w := &Writer[string]{Write: rec.write, Max: rec.max}
	const callers, each = 64, 20
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				e := fmt.Sprintf("c%d-%d", c, i)
				if err := w.Add(context.Background(), fmt.Sprintf("k%d", c%3), e); err != nil {
					t.Errorf("add %s: %v", e, err)
					return
				}
				if !rec.has(e) {
					t.Errorf("Add(%s) returned before its entry was written", e)
				}
			}
		})
	}
	wg.Wait()
	if n := len(rec.written); n != callers*each {
		t.Fatalf("%d entries written, want %d", n, callers*each)
	}
	if rec.overlap > 0 {
		t.Errorf("%d writes of a key overlapped one in flight without being full", rec.overlap)
	}
	if rec.writes*2 > callers*each {
		t.Errorf("%d writes for %d entries: no grouping", rec.writes, callers*each)
	}
	t.Logf("%d entries in %d writes", callers*each, rec.writes)
	// The flush that closed the last batch forgets its key just after.
	testutil.EventuallyEvery(t, 5*time.Second, time.Millisecond, "no key pending once every write landed", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.keys) == 0, fmt.Sprintf("%d keys pending", len(w.keys))
	})
}

// A failed write fails every caller whose entry it held.
func TestAddWriteFails(t *testing.T) {
	boom := errors.New("boom")
	rec := &recorder{written: map[string]int{}, inFlight: map[string]int{}, max: 100, delay: time.Millisecond, fail: boom}
	w := &Writer[string]{Write: rec.write}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := w.Add(context.Background(), "k", fmt.Sprint(i)); !errors.Is(err, boom) {
				t.Errorf("add: %v, want boom", err)
			}
		})
	}
	wg.Wait()
}

// A caller whose context ends stops waiting; the batch is still
// written for the others.
func TestAddContextEnds(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got [][]string
	w := &Writer[string]{Write: func(ctx context.Context, key string, batch []string) error {
		<-release
		mu.Lock()
		got = append(got, append([]string(nil), batch...))
		mu.Unlock()
		return nil
	}}
	first := make(chan error, 1)
	go func() { first <- w.Add(context.Background(), "k", "a") }()
	// "a" is in flight; "b" waits for the next batch.
	testutil.EventuallyEvery(t, 5*time.Second, time.Millisecond, "a write in flight", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.keys["k"] != nil && w.keys["k"].busy, "none"
	})
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- w.Add(ctx, "k", "b") }()
	testutil.EventuallyEvery(t, 5*time.Second, time.Millisecond, "the second entry waiting for the next batch", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.keys["k"].open != nil, "no batch open"
	})
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("second: %v, want canceled", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyEvery(t, 5*time.Second, time.Millisecond, "the abandoned caller's batch written", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 2, fmt.Sprint(got)
	})
	if len(got[1]) != 1 || got[1][0] != "b" {
		t.Fatalf("batches %v", got)
	}
}
