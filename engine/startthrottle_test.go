package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
)

// A start whose run record the store refuses for rate retries the create
// with the same id and timer: the start succeeds and leaves one timer, not
// one per refusal.
func TestStartThrottledReusesTimer(t *testing.T) {
	ctx := context.Background()
	store, ctl := faults.Wrap(mem.New(), faults.Profile{})
	e := newTestEngine(t, store, Config{})
	register(t, e, "w", single("x", cairn.Step{}))
	ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: e.keys.Prefix + "runs/", Err: blob.ErrThrottled, Times: startRetries})
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
	store, ctl := faults.Wrap(mem.New(), faults.Profile{})
	e := newTestEngine(t, store, Config{})
	register(t, e, "w", single("x", cairn.Step{}))
	ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: e.keys.Prefix + "runs/", Err: blob.ErrThrottled})
	for range 3 { // a client retrying
		_, err := e.StartRun(ctx, StartRequest{Workflow: "x"})
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
	store, ctl := faults.Wrap(mem.New(), faults.Profile{})
	e := newTestEngine(t, store, Config{})
	register(t, e, "w", single("x", cairn.Step{}))
	ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: e.keys.Prefix + "runs/", After: true, Err: errors.New("connection reset"), Times: 1})
	if _, err := e.StartRun(ctx, StartRequest{Workflow: "x"}); err == nil {
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
	store, ctl := faults.Wrap(mem.New(), faults.Profile{})
	counted, counts := counting.Wrap(store)
	// Admission control off: it would shed most of these starts before
	// they write (TestStartsShedWhileStoreThrottles); this is the budget
	// of the starts it admits.
	e := newTestEngine(t, counted, Config{ShedAbove: -1})
	register(t, e, "w", single("x", cairn.Step{}))
	ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: e.keys.Prefix + "runs/", Err: blob.ErrThrottled})
	counts.Reset()
	const starts = 60
	for range starts {
		if _, err := e.StartRun(ctx, StartRequest{Workflow: "x"}); err == nil {
			t.Fatal("a refused start succeeded")
		}
	}
	if got := counts.Snapshot().Create; got != starts+retryBudgetMax {
		t.Fatalf("%d refused starts made %d creates, want one each and %d retries (the budget)", starts, got, retryBudgetMax)
	}
	ctl.Clear()
	for range 20 { // 20 first-time successes earn 2 retries
		mustStart(t, e, "x", `{}`)
	}
	ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: e.keys.Prefix + "runs/", Err: blob.ErrThrottled})
	counts.Reset()
	if _, err := e.StartRun(ctx, StartRequest{Workflow: "x"}); err == nil {
		t.Fatal("a refused start succeeded")
	}
	if got := counts.Snapshot().Create; got != 3 {
		t.Fatalf("after 20 successes a refused start made %d creates, want 3 (two retries earned)", got)
	}
}
