package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// The shed share follows max(0, (R − K·A)/(R + 1)) over the window:
// nothing below ShedAbove refused, the formula above it, nothing once the
// window has passed, and conflicts or lost connections do not count.
func TestAdmissionShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	throttled := &blob.Error{Op: "swap", Key: "runs/x", Err: blob.ErrThrottled}
	feed := func(a *admission, n, refused int, other error) {
		for i := range n {
			at := now.Add(time.Duration(i) * 10 * time.Millisecond)
			switch {
			case i < refused:
				a.wrote(at, throttled)
			case other != nil && i%2 == 0:
				a.wrote(at, other)
			default:
				a.wrote(at, nil)
			}
		}
	}
	at := now.Add(11 * time.Second) // the feed spans 10 s
	for _, tc := range []struct {
		name       string
		n, refused int
		other      error
		want       float64
	}{
		{"none refused", 1000, 0, nil, 0},
		{"9% refused", 1000, 90, nil, 0},
		{"50% refused", 1000, 500, nil, (1000 - 500/0.9) / 1001},
		{"90% refused", 1000, 900, nil, (1000 - 100/0.9) / 1001},
		{"too few writes", 19, 19, nil, 0},
		{"conflicts do not count", 1000, 0, blob.ErrPreconditionFailed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmission(DefaultShedAbove)
			feed(a, tc.n, tc.refused, tc.other)
			if got := a.Probability(at); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("shed share %.4f, want %.4f", got, tc.want)
			}
			if got := a.Probability(at.Add(throttle.Window + time.Second)); got != 0 {
				t.Fatalf("after the window: shed share %.4f, want 0", got)
			}
		})
	}
	if p := func() float64 { a := newAdmission(-1); feed(a, 1000, 900, nil); return a.Probability(at) }(); p != 0 {
		t.Fatalf("ShedAbove < 0: shed share %.4f, want 0 (off)", p)
	}
}

// While the store refuses most of an instance's writes for rate, StartRun
// refuses a share of new runs with UnavailableError before it makes any
// request; once the refusals stop and the window has passed, every start
// is admitted. The runs already started keep being served.
func TestStartsShedWhileStoreThrottles(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	faulty, fs := faults.Wrap(mem.New(), faults.Profile{})
	store, counts := counting.Wrap(faulty)
	e := newTestEngine(t, store, Config{Now: now})
	register(t, e, "w", linear("one", "1", 1))
	ctx := context.Background()
	old := startRetryBase
	startRetryBase = time.Millisecond
	t.Cleanup(func() { startRetryBase = old })

	fs.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate, faults.OpSwap, faults.OpPut}, Err: blob.ErrThrottled, Probability: 0.7})
	shed, refused, ok := 0, 0, 0
	for i := 0; i < 300 && shed == 0; i++ {
		before := counts.Snapshot()
		_, err := e.StartRun(ctx, StartRequest{Workflow: "one", Version: "1"})
		var u *UnavailableError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &u) && errors.Is(err, errShed):
			shed++
			if d := counts.Snapshot().Sub(before); d.Total() != 0 {
				t.Fatalf("a shed start made %d store requests (%+v), want none", d.Total(), d)
			}
		case errors.As(err, &u):
			refused++
		default:
			t.Fatalf("start %d: %v", i, err)
		}
		advance(50 * time.Millisecond)
	}
	if shed == 0 {
		t.Fatalf("300 starts against a store refusing 70%% of writes: none shed (%d started, %d refused by the store)", ok, refused)
	}
	// The share is high now: most further starts are shed.
	shedNow := 0
	for range 100 {
		if _, err := e.StartRun(ctx, StartRequest{Workflow: "one", Version: "1"}); errors.Is(err, errShed) {
			shedNow++
		}
	}
	if p := e.admit.Probability(now()); shedNow < 20 || p < 0.3 {
		t.Fatalf("at a 70%% refusal rate: %d of 100 starts shed, share %.2f; want ≥ 20 and ≥ 0.3", shedNow, p)
	}
	// Bad input is still a 4xx while shedding.
	for range 20 {
		if _, err := e.StartRun(ctx, StartRequest{Workflow: "no such/name", Version: "1"}); errors.Is(err, errShed) {
			t.Fatal("an invalid start was answered shed; want its validation error")
		}
	}

	fs.Clear()
	advance(throttle.Window + time.Second)
	for i := range 50 {
		if _, err := e.StartRun(ctx, StartRequest{Workflow: "one", Version: "1"}); err != nil {
			t.Fatalf("start %d after the refusals stopped and the window passed: %v", i, err)
		}
	}
	fmt.Fprintf(testWriter{t}, "throttled phase: %d started, %d refused by the store, %d shed before the share settled; then %d of 100 shed", ok, refused, shed, shedNow)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
