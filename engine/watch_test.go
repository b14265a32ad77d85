package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/notify"
	notifyfaults "github.com/cairn-dev/cairn/notify/faults"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

// watchAcross starts a run of one step on engine a, claims it, holds a
// status request on engine w and completes the step on a once the request
// waits. It returns how long after the complete the request answered, and
// the answer.
func watchAcross(t *testing.T, a, w *Engine, wait time.Duration) (time.Duration, *cairn.RunProgress) {
	t.Helper()
	ctx := context.Background()
	register(t, a, "w", single("one", cairn.Step{}))
	id := mustStart(t, a, "one", `{}`)
	l := claimOne(t, a, "w")
	p, err := a.GetRunStatus(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		p  *cairn.RunProgress
		at time.Time
	}
	got := make(chan answer, 1)
	go func() {
		q, err := w.GetRunStatus(ctx, id, p.Rev, wait)
		if err != nil {
			t.Error(err)
		}
		got <- answer{q, time.Now()}
	}()
	awaitWatched(t, w, id)
	t0 := time.Now()
	if _, err := a.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	x := <-got
	if x.p == nil || x.p.Rev <= p.Rev || x.p.Status != cairn.RunCompleted {
		t.Fatalf("watcher answered %+v, want the completed run after rev %d", x.p, p.Rev)
	}
	return x.at.Sub(t0), x.p
}

// TestWatchWokenAcrossInstances: a status request waiting on engine B
// answers within milliseconds of a commit on engine A (one bucket, one
// bus), far under the fallback interval, with one read for the change.
func TestWatchWokenAcrossInstances(t *testing.T) {
	bucket := mem.New()
	bus := notifymem.New()
	cfg := Config{Bus: bus, FallbackInterval: 5 * time.Second}
	a := newTestEngine(t, bucket, cfg)
	bStore, counts := counting.Wrap(bucket)
	b := newTestEngine(t, bStore, cfg)
	took, _ := watchAcross(t, a, b, 10*time.Second)
	if took > time.Second {
		t.Fatalf("watcher on B answered %v after the commit on A; want well under the %v fallback", took, cfg.FallbackInterval)
	}
	// The request's first read, one read when woken, and the definition
	// (cold on B) for the answer's step order.
	if s := counts.Snapshot(); s.Get > 3 {
		t.Errorf("watcher on B made %d GETs, want at most 3 (%v)", s.Get, s)
	}
	t.Logf("woken %v after the complete on A; B: %v", took, counts.Snapshot())
}

// TestWatchFallbackWhenNoticesLost: with every notification dropped, a
// request waiting on another instance still sees the change, at its
// fallback read.
func TestWatchFallbackWhenNoticesLost(t *testing.T) {
	bucket := mem.New()
	bus := notifyfaults.DropAll(notifymem.New())
	const fallback = 300 * time.Millisecond
	cfg := Config{Bus: bus, FallbackInterval: fallback}
	a := newTestEngine(t, bucket, cfg)
	b := newTestEngine(t, bucket, cfg)
	took, _ := watchAcross(t, a, b, 10*time.Second)
	if took > fallback+time.Second {
		t.Fatalf("watcher answered %v after the commit, want within the %v fallback", took, fallback)
	}
	if bus.Stats().Dropped == 0 {
		t.Fatal("the bus dropped nothing: the test does not test the fallback")
	}
	t.Logf("answered %v after the commit, by the fallback read", took)
}

// TestWatchSameInstanceReadsNothingWhenWoken: a request waiting on the
// instance that commits the change answers from the committer's copy.
func TestWatchSameInstanceReadsNothingWhenWoken(t *testing.T) {
	store, counts := counting.Wrap(mem.New())
	e := newTestEngine(t, store, Config{})
	ctx := context.Background()
	register(t, e, "w", single("one", cairn.Step{}))
	id := mustStart(t, e, "one", `{}`)
	l := claimOne(t, e, "w")
	p, err := e.GetRunStatus(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *cairn.RunProgress, 1)
	go func() {
		q, _ := e.GetRunStatus(ctx, id, p.Rev, 10*time.Second)
		got <- q
	}()
	awaitWatched(t, e, id)
	before := counts.Snapshot()
	if _, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	q := <-got
	if q == nil || q.Status != cairn.RunCompleted {
		t.Fatalf("watcher answered %+v", q)
	}
	// The complete proves its lease from the instance's lease cache (this
	// instance made it) and the watcher answers from the committer's copy:
	// no read at all.
	if d := counts.Snapshot().Sub(before); d.Get != 0 {
		t.Errorf("%d GETs during the complete and the wake-up, want 0: %v", d.Get, d)
	}
	// A request after a rev the committer's copy already passed answers
	// from it, without a read.
	before = counts.Snapshot()
	if q, err := e.GetRunStatus(ctx, id, p.Rev, 10*time.Second); err != nil || q.Rev <= p.Rev {
		t.Fatalf("%+v, %v", q, err)
	}
	if d := counts.Snapshot().Sub(before); d.Get != 0 {
		t.Errorf("a wait answered from the committer's copy made %d GETs", d.Get)
	}
}

// TestWatchHoldsUntilWait: without a change, a waiting request answers at
// its wait with the unchanged revision.
func TestWatchHoldsUntilWait(t *testing.T) {
	e := newTestEngine(t, nil, Config{FallbackInterval: 50 * time.Millisecond})
	register(t, e, "w", single("one", cairn.Step{}))
	id := mustStart(t, e, "one", `{}`)
	ctx := context.Background()
	p, err := e.GetRunStatus(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	q, err := e.GetRunStatus(ctx, id, p.Rev, 300*time.Millisecond)
	if err != nil || q.Rev != p.Rev {
		t.Fatalf("%+v, %v", q, err)
	}
	if d := time.Since(t0); d < 250*time.Millisecond || d > 2*time.Second {
		t.Fatalf("held %v, want about 300ms", d)
	}
	if n := e.watch.Waiting(id); n != 0 {
		t.Fatalf("%d watchers left registered", n)
	}
}

// TestChangeNoticeIsNotWork: a run-change notice on the bus never reaches
// the hub of claimable hints, so no claim spends a read on it.
func TestChangeNoticeIsNotWork(t *testing.T) {
	bus := notifymem.New()
	e := newTestEngine(t, nil, Config{Bus: bus})
	register(t, e, "w", single("one", cairn.Step{Kind: cairn.KindWait, Event: "go"}))
	id := mustStart(t, e, "one", `{}`)
	// A watcher of the run, to be told when the notice is delivered.
	w, stop := e.watch.Add(id)
	defer stop()
	_, heard := e.watch.State(w)
	if err := bus.Publish(context.Background(), []notify.Hint{{Run: id, Workflow: "one", Version: "1", Step: "only", Attempt: 1, Changed: true, Rev: 9}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
	case <-time.After(10 * time.Second):
		t.Fatal("the change notice did not reach the run's watchers within 10 s")
	}
	if rev, _ := e.watch.State(w); rev != 9 {
		t.Fatalf("the watchers heard of rev %d, want the notice's 9", rev)
	}
	if n := e.hub.Size(); n != 0 {
		t.Fatalf("hub holds %d hints after a change notice, want 0", n)
	}
	e.hub.Add(notify.Hint{Run: id, Workflow: "one", Version: "1", Step: "only", Attempt: 1, Changed: true})
	if n := e.hub.Size(); n != 0 {
		t.Fatalf("hub.add kept a change notice")
	}
}
