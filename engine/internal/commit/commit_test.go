package commit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/internal/testutil"
)

// counter is a record of the tests: a count and its revision.
type counter struct {
	N   int   `json:"n"`
	Rev int64 `json:"rev"`
}

type fx struct{ added int }

// harness is a committer over one counter record in a mem bucket, with
// its writes counted and, when gate is set, the first write held until
// the test releases it.
type harness struct {
	b      *blob.Bucket
	c      *Committer[counter, fx]
	writes atomic.Int32
	reads  atomic.Int32
	after  atomic.Int32

	gate    chan struct{} // closed to let the held write go on
	entered chan struct{} // closed when the held write began
	once    sync.Once
}

const key = "rec"

func newHarness(t *testing.T, gated bool) *harness {
	t.Helper()
	h := &harness{b: mem.New()}
	if gated {
		h.gate, h.entered = make(chan struct{}), make(chan struct{})
	}
	if _, err := h.b.Create(context.Background(), key, mustJSON(&counter{})); err != nil {
		t.Fatal(err)
	}
	h.c = New(Host[counter, fx]{
		Read: func(ctx context.Context, id string) (*blob.Object, error) {
			h.reads.Add(1)
			return h.b.Get(ctx, id)
		},
		Begin: func() *fx { return &fx{} },
		Reset: func(f *fx, _ *counter) { f.added = 0 },
		Write: func(ctx context.Context, r *counter, ver blob.Version, _ *fx) ([]byte, blob.Version, error) {
			if h.gate != nil {
				h.once.Do(func() {
					close(h.entered)
					<-h.gate
				})
			}
			h.writes.Add(1)
			r.Rev++
			data := mustJSON(r)
			nv, err := h.b.Swap(ctx, key, data, ver)
			return data, nv, err
		},
		Landed:   func(*counter, *fx, int, int) {},
		After:    func(*fx) { h.after.Add(1) },
		Rev:      func(r *counter) int64 { return r.Rev },
		Timeout:  10 * time.Second,
		MaxBytes: 1 << 20,
		Log:      slog.New(slog.DiscardHandler),
	})
	return h
}

func add(n int) Mutation[counter, fx] {
	return func(r *counter, f *fx) (any, error) {
		r.N += n
		f.added += n
		return r.N, nil
	}
}

func (h *harness) stored(t *testing.T) counter {
	t.Helper()
	var c counter
	o, err := h.b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(o.Data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// overwrite is another writer: it swaps c in for the stored record,
// behind the committer's back.
func (h *harness) overwrite(t *testing.T, c counter) {
	t.Helper()
	ctx := context.Background()
	o, err := h.b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.b.Swap(ctx, key, mustJSON(&c), o.Version); err != nil {
		t.Fatal(err)
	}
}

// awaitQueued waits until n mutations wait behind the batch in flight
// (10 s at most).
func (h *harness) awaitQueued(t *testing.T, n int) {
	t.Helper()
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, fmt.Sprintf("%d mutations queued behind the write", n), func() (bool, string) {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		q := 0
		if b := h.c.batches[key]; b != nil {
			q = len(b.items)
		}
		return q >= n, fmt.Sprintf("%d queued", q)
	})
}

// Mutations that arrive while a write is in flight land together in the
// next one: 1 + 49 changes, two writes, every caller answered with the
// count its own change saw.
func TestGroupCommit(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	const n = 50
	answers := make(chan any, n)
	var wg sync.WaitGroup
	do := func() {
		defer wg.Done()
		v, err := h.c.Do(ctx, key, add(1))
		if err != nil {
			t.Error(err)
		}
		answers <- v
	}
	wg.Add(1)
	go do()
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first write did not begin within 10 s")
	}
	wg.Add(n - 1)
	for range n - 1 {
		go do()
	}
	h.awaitQueued(t, n-1)
	close(h.gate)
	wg.Wait()
	close(answers)
	seen := map[int]bool{}
	for v := range answers {
		seen[v.(int)] = true
	}
	if len(seen) != n {
		t.Errorf("answers: %d distinct counts, want %d (each change sees its own)", len(seen), n)
	}
	if got := h.stored(t); got.N != n || got.Rev != 2 {
		t.Errorf("stored %+v, want n=%d at rev 2", got, n)
	}
	if w := h.writes.Load(); w != 2 {
		t.Errorf("%d writes for %d changes, want 2 (one, then the rest together)", w, n)
	}
	if a := h.after.Load(); a != 2 {
		t.Errorf("After ran %d times, want once per write (2)", a)
	}
}

// A swap that loses to another writer reads the winner's record and
// applies the mutation again on it: nothing is lost, nothing doubled.
func TestLostSwapAppliesAgain(t *testing.T) {
	h := newHarness(t, false)
	ctx := context.Background()
	if _, err := h.c.Do(ctx, key, add(1)); err != nil { // caches rev 1
		t.Fatal(err)
	}
	h.overwrite(t, counter{N: 100, Rev: 7})
	var runs atomic.Int32
	v, err := h.c.Do(ctx, key, func(r *counter, f *fx) (any, error) {
		runs.Add(1)
		return add(1)(r, f)
	})
	if err != nil {
		t.Fatal(err)
	}
	if v != 101 || runs.Load() != 2 {
		t.Errorf("answer %v after %d applications, want 101 after 2 (the stale copy, then the winner's)", v, runs.Load())
	}
	if got := h.stored(t); got.N != 101 || got.Rev != 8 {
		t.Errorf("stored %+v, want n=101 at rev 8", got)
	}
}

// A refusal decided on the cached copy is trusted only after a fresh
// read: another writer may have made the change possible.
func TestRefusalOnCachedCopyReadsAgain(t *testing.T) {
	h := newHarness(t, false)
	ctx := context.Background()
	if _, err := h.c.Do(ctx, key, add(1)); err != nil {
		t.Fatal(err)
	}
	h.overwrite(t, counter{N: 10, Rev: 2})
	reads := h.reads.Load()
	atLeast10 := func(r *counter, f *fx) (any, error) {
		if r.N < 10 {
			return nil, errors.New("below 10")
		}
		return add(1)(r, f)
	}
	if v, err := h.c.Do(ctx, key, atLeast10); err != nil || v != 11 {
		t.Fatalf("got %v, %v; want 11 from the fresh record", v, err)
	}
	if h.reads.Load() != reads+1 {
		t.Errorf("%d reads, want 1 (the refusal on the cached copy checked)", h.reads.Load()-reads)
	}
}

// A mutation that panics is answered with an internal error, its
// half-done change is not written, the rest of its batch lands, and the
// committer goes on.
func TestPanickingMutationFailsAlone(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { _, err := h.c.Do(ctx, key, add(1)); first <- err }()
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first write did not begin within 10 s")
	}
	results := make(chan error, 2)
	go func() {
		_, err := h.c.Do(ctx, key, func(r *counter, f *fx) (any, error) {
			r.N += 1000
			panic("a bug")
		})
		results <- err
	}()
	h.awaitQueued(t, 1)
	go func() { _, err := h.c.Do(ctx, key, add(1)); results <- err }()
	h.awaitQueued(t, 2)
	close(h.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	var internal, ok int
	for range 2 {
		err := <-results
		var ie *errs.InternalError
		switch {
		case errors.As(err, &ie):
			internal++
		case err == nil:
			ok++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if internal != 1 || ok != 1 {
		t.Errorf("%d internal errors and %d successes, want 1 and 1", internal, ok)
	}
	if got := h.stored(t); got.N != 2 {
		t.Errorf("stored n=%d, want 2 (the panicking change not written)", got.N)
	}
	if v, err := h.c.Do(ctx, key, add(1)); err != nil || v != 3 {
		t.Errorf("after the panic: %v, %v; want 3", v, err)
	}
}

// A change that would grow the record past MaxBytes is refused with
// too_large; the record is unchanged.
func TestTooLargeRefused(t *testing.T) {
	h := newHarness(t, false)
	h.c.h.MaxBytes = 64
	ctx := context.Background()
	_, err := h.c.Do(ctx, key, func(r *counter, f *fx) (any, error) {
		r.N = 1 << 60 // still small
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.c.h.MaxBytes = 8 // below any counter's size: every change is too large
	_, err = h.c.Do(ctx, key, add(1))
	if reason, ok := errs.IsRejection(err); !ok || reason != cairn.ReasonTooLarge {
		t.Fatalf("got %v (%T), want a too_large refusal", err, err)
	}
	if got := h.stored(t); got.N != 1<<60 {
		t.Errorf("stored n=%d, want it unchanged", got.N)
	}
}
