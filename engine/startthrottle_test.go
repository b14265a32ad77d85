package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// startsOnFaultyStore is an engine with cfg on a store that fails as
// its controller is told, its requests counted, where worker w serves
// workflow x of one step.
func startsOnFaultyStore(t *testing.T, cfg Config) (*blob.Bucket, *faults.Store, *counting.Counts, *Engine) {
	t.Helper()
	h := newHarness(t, withFaults(faults.Profile{}), counted(), withConfig(cfg), wallClock(), withWorkflows("w", single("x", cairn.Step{})))
	return h.base, h.faults, h.counts, h.e
}

// failRunCreates makes the creates of e's run records fail as rule says.
func failRunCreates(ctl *faults.Store, e *Engine, rule faults.Rule) {
	rule.Ops, rule.KeyPrefix = []faults.Op{faults.OpCreate}, e.keys.Prefix+"runs/"
	ctl.Inject(rule)
}

// A start whose run record the store refuses for rate retries the create
// with the same id and timer: the start succeeds and leaves one timer, not
// one per refusal.
func TestStartThrottledReusesTimer(t *testing.T) {
	ctx := context.Background()
	store, ctl, _, e := startsOnFaultyStore(t, Config{})
	failRunCreates(ctl, e, faults.Rule{Err: blob.ErrThrottled, Times: startRetries})
	id := mustStart(t, e, "x", `{}`)
	timers, err := store.ListAll(ctx, e.keys.TimersPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(timers) != 1 {
		t.Fatalf("after %d refused creates: %d timers %v, want the start's one", startRetries, len(timers), timers)
	}
	if _, name, ok := e.keys.ParseTimer(timers[0].Key); !ok || name != id {
		t.Fatalf("timer %s is not run %s's", timers[0].Key, id)
	}
	if r := getRun(t, e, id); r.Status != cairn.RunRunning {
		t.Fatalf("run %s", r.Status)
	}
	ls := claimOne(t, e, "w")
	if ls.Run != id {
		t.Fatalf("claimed run %s, want %s", ls.Run, id)
	}
}

// A start the store keeps refusing answers unavailable and leaves
// nothing behind: neither a run nor its timer (which the reaper would
// otherwise read and delete, once per client retry).
func TestStartRefusedLeavesNoTimer(t *testing.T) {
	ctx := context.Background()
	store, ctl, _, e := startsOnFaultyStore(t, Config{})
	failRunCreates(ctl, e, faults.Rule{Err: blob.ErrThrottled})
	for range 3 { // a client retrying
		_, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "x"})
		var u *UnavailableError
		if !errors.As(err, &u) {
			t.Fatalf("start: %v, want unavailable", err)
		}
	}
	for _, prefix := range []string{e.keys.TimersPrefix(), e.keys.Prefix + "runs/"} {
		left, err := store.ListAll(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Fatalf("refused starts left %d objects under %s: %v", len(left), prefix, left)
		}
	}
	ctl.Clear()
	id := mustStart(t, e, "x", `{}`)
	if got := claimOne(t, e, "w"); got.Run != id {
		t.Fatalf("claimed %s, want %s", got.Run, id)
	}
}

// A create whose outcome is unknown (it may have landed) keeps its timer:
// a run record without its timer would not be found by the reaper. Here
// the create lands and its answer is lost; the run's timer must remain
// and the reaper must find the run through it.
func TestStartUnknownOutcomeKeepsTimer(t *testing.T) {
	ctx := context.Background()
	store, ctl, _, e := startsOnFaultyStore(t, Config{})
	failRunCreates(ctl, e, faults.Rule{After: true, Err: errors.New("connection reset"), Times: 1})
	if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "x"}); err == nil {
		t.Fatal("start with a lost answer succeeded")
	}
	runs, err := store.ListAll(ctx, e.keys.Prefix+"runs/")
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v, want the one that landed", runs, err)
	}
	timers, err := store.ListAll(ctx, e.keys.TimersPrefix())
	if err != nil || len(timers) != 1 {
		t.Fatalf("timers: %v %v, want the landed run's", timers, err)
	}
}

// Under refusals that do not stop, a start's own retries stop when the
// instance's retry budget is spent: the client's retries are not
// multiplied by the engine's. Starts that succeed first time refill it.
func TestStartRetryBudget(t *testing.T) {
	defer func(d time.Duration) { startRetryBase = d }(startRetryBase)
	startRetryBase = time.Millisecond
	ctx := context.Background()
	// Admission control off: it would shed most of these starts before
	// they write (TestStartsShedWhileStoreThrottles); this is the budget
	// of the starts it admits.
	_, ctl, counts, e := startsOnFaultyStore(t, Config{ShedAbove: -1})
	failRunCreates(ctl, e, faults.Rule{Err: blob.ErrThrottled})
	counts.Reset()
	const starts = 60
	for range starts {
		if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "x"}); err == nil {
			t.Fatal("a refused start succeeded")
		}
	}
	if got := counts.Snapshot().Create; got != starts+throttle.BudgetMax {
		t.Fatalf("%d refused starts made %d creates, want one each and %d retries (the budget)", starts, got, throttle.BudgetMax)
	}
	ctl.Clear()
	for range 20 { // 20 first-time successes earn 2 retries
		mustStart(t, e, "x", `{}`)
	}
	failRunCreates(ctl, e, faults.Rule{Err: blob.ErrThrottled})
	counts.Reset()
	if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "x"}); err == nil {
		t.Fatal("a refused start succeeded")
	}
	if got := counts.Snapshot().Create; got != 3 {
		t.Fatalf("after 20 successes a refused start made %d creates, want 3 (two retries earned)", got)
	}
}

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
				a.Saw(at, throttled)
			case other != nil && i%2 == 0:
				a.Saw(at, other)
			default:
				a.Saw(at, nil)
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
	h := newHarness(t, withFaults(faults.Profile{}), counted(), withConfig(Config{Now: now}), withWorkflows("w", linear("one", "1", 1)))
	ctx, e, fs, counts := h.ctx, h.e, h.faults, h.counts
	old := startRetryBase
	startRetryBase = time.Millisecond
	t.Cleanup(func() { startRetryBase = old })

	fs.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate, faults.OpSwap, faults.OpPut}, Err: blob.ErrThrottled, Probability: 0.7})
	shed, refused, ok := 0, 0, 0
	for i := 0; i < 300 && shed == 0; i++ {
		before := counts.Snapshot()
		_, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "one", Version: "1"})
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
		if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "one", Version: "1"}); errors.Is(err, errShed) {
			shedNow++
		}
	}
	if p := e.admit.Probability(now()); shedNow < 20 || p < 0.3 {
		t.Fatalf("at a 70%% refusal rate: %d of 100 starts shed, share %.2f; want ≥ 20 and ≥ 0.3", shedNow, p)
	}
	// Bad input is still a 4xx while shedding.
	for range 20 {
		if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "no such/name", Version: "1"}); errors.Is(err, errShed) {
			t.Fatal("an invalid start was answered shed; want its validation error")
		}
	}

	fs.Clear()
	advance(throttle.Window + time.Second)
	for i := range 50 {
		if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "one", Version: "1"}); err != nil {
			t.Fatalf("start %d after the refusals stopped and the window passed: %v", i, err)
		}
	}
	fmt.Fprintf(testWriter{t}, "throttled phase: %d started, %d refused by the store, %d shed before the share settled; then %d of 100 shed", ok, refused, shed, shedNow)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
