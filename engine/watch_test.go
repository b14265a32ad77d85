package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/notify"
	notifyfaults "github.com/cairn-dev/cairn/notify/faults"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

// claimedOne registers workflow one (of one step) for worker w on e,
// starts a run of it and claims the step; it returns the run, the lease
// and the run's status once claimed, which a watch waits to change.
func claimedOne(t *testing.T, e *Engine) (string, cairn.Lease, *cairn.RunProgress) {
	t.Helper()
	register(t, e, "w", single("one", cairn.Step{}))
	id := mustStart(t, e, "one", `{}`)
	l := claimOne(t, e, "w")
	p, err := e.GetRunStatus(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return id, l, p
}

// watchAcross starts a run of one step on engine a, claims it, holds a
// status request on engine w and completes the step on a once the request
// waits. It returns how long after the complete the request answered, and
// the answer.
func watchAcross(t *testing.T, a, w *Engine, wait time.Duration) (time.Duration, *cairn.RunProgress) {
	t.Helper()
	ctx := context.Background()
	id, l, p := claimedOne(t, a)
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
	if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
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
	h := newHarness(t, withConfig(Config{Bus: notifymem.New(), FallbackInterval: 5 * time.Second}), wallClock())
	a := h.e
	b, counts := h.countedPeer()
	took, _ := watchAcross(t, a, b, 10*time.Second)
	if took > time.Second {
		t.Fatalf("watcher on B answered %v after the commit on A; want well under the %v fallback", took, h.cfg.FallbackInterval)
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
	bus := notifyfaults.DropAll(notifymem.New())
	const fallback = 300 * time.Millisecond
	h := newHarness(t, withConfig(Config{Bus: bus, FallbackInterval: fallback}), wallClock())
	a, b := h.e, h.peer()
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
	h := newHarness(t, wallClock(), counted())
	e, ctx, counts := h.e, h.ctx, h.counts
	id, l, p := claimedOne(t, e)
	got := make(chan *cairn.RunProgress, 1)
	go func() {
		q, _ := e.GetRunStatus(ctx, id, p.Rev, 10*time.Second)
		got <- q
	}()
	awaitWatched(t, e, id)
	before := counts.Snapshot()
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
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

// TestWatchHoldsShareTheCommittersRecord: the requests held on a run
// that a commit here wakes answer from the committer's copy decoded once
// for them all, not a decode of the whole record each (a run watched by
// many viewers decoded it once per viewer per change).
func TestWatchHoldsShareTheCommittersRecord(t *testing.T) {
	h := newHarness(t, wallClock())
	e, ctx := h.e, h.ctx
	id, l, p := claimedOne(t, e)
	const holds = 20
	got := make(chan *runRecord, holds)
	for range holds {
		go func() {
			r, err := e.watchRun(ctx, id, p.Rev, false, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
	}
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "every request held on the run", func() (bool, string) {
		n := e.watch.Waiting(id)
		return n == holds, fmt.Sprintf("%d of %d requests waiting", n, holds)
	})
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	shared := e.sharedRun(id, p.Rev+1)
	if shared == nil {
		t.Fatal("the committer holds no copy of the completed run")
	}
	for range holds {
		r := <-got
		if r == nil || r.Status != cairn.RunCompleted {
			t.Fatalf("a held request answered %+v", r)
		}
		if r != shared {
			t.Fatalf("a held request answered its own decode of rev %d, not the committer's shared copy (rev %d)", r.Rev, shared.Rev)
		}
	}
}

// TestWatchHoldsUntilWait: without a change, a waiting request answers at
// its wait with the unchanged revision.
func TestWatchHoldsUntilWait(t *testing.T) {
	h := newHarness(t, withConfig(Config{FallbackInterval: 50 * time.Millisecond}), wallClock(), withWorkflows("w", single("one", cairn.Step{})))
	e := h.e
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

// TestAwaitRunAnswersAtTheEnd: a run of three steps, awaited on the
// instance that commits them and on another one over the bus: both
// requests are held through the intermediate changes and answer the
// ended run, with its outputs, once. The request on the committing
// instance reads nothing after its first read; the other reads once per
// change it is told of.
func TestAwaitRunAnswersAtTheEnd(t *testing.T) {
	h := newHarness(t, counted(), withConfig(Config{Bus: notifymem.New(), FallbackInterval: 5 * time.Second}), wallClock(), withWorkflows("w", linear("lin", "1", 3)))
	ctx, a, aCounts, b := h.ctx, h.e, h.counts, h.uncountedPeer()
	// The instance's first fallback scan and worker sighting, and the
	// start's hint delivered over the bus, before anything is counted.
	warmUp(t, a, "w")
	run := mustStart(t, a, "lin", `{"n":1}`)
	type answer struct {
		r   *cairn.Run
		err error
		at  time.Time
	}
	onA, onB := make(chan answer, 1), make(chan answer, 1)
	for _, x := range []struct {
		e  *Engine
		ch chan answer
	}{{a, onA}, {b, onB}} {
		go func() {
			r, _, err := x.e.AwaitRun(ctx, run, 20*time.Second, "k", "getRun")
			x.ch <- answer{r, err, time.Now()}
		}()
	}
	awaitWatched(t, a, run)
	awaitWatched(t, b, run)
	aCounts.Reset()
	var last time.Time
	for i := range 3 {
		l := claimOne(t, a, "w")
		if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"o"`)}); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		if i < 2 {
			select {
			case got := <-onA:
				t.Fatalf("answered before the run ended: %+v", got)
			case got := <-onB:
				t.Fatalf("answered before the run ended: %+v", got)
			default:
			}
		}
	}
	for name, ch := range map[string]chan answer{"A": onA, "B": onB} {
		got := <-ch
		if got.err != nil || got.r.Status != cairn.RunCompleted || string(got.r.Output) == "" {
			t.Fatalf("%s: %+v %v", name, got.r, got.err)
		}
		if d := got.at.Sub(last); d > time.Second {
			t.Fatalf("%s answered %v after the last complete", name, d)
		}
	}
	if g := aCounts.Snapshot().Get; g != 0 {
		t.Errorf("A made %d GETs for 3 steps and its waiting request, want 0", g)
	}
}

// TestAwaitRunHoldEnds: a run that does not end within the hold is
// answered as it is, running, when the hold ends.
func TestAwaitRunHoldEnds(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("slow", cairn.Step{})))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "slow", `{}`)
	start := time.Now()
	r, _, err := e.AwaitRun(ctx, run, 300*time.Millisecond, "k", "getRun")
	if err != nil || r.Status != cairn.RunRunning {
		t.Fatalf("%+v %v", r, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("answered after %v, before the hold ended", d)
	}
	if _, _, err := e.AwaitRun(ctx, "not-a-run!", time.Second, "k", "getRun"); err == nil {
		t.Fatal("a malformed run id was accepted")
	}
}

// BenchmarkWatchLatency measures how soon a waiting status request
// (GetRunStatus with after and wait) returns once its run changes: a run
// of one step is claimed, a watcher long-polls its status, and the step
// completes 5–50 ms later (a random phase). It reports the p50/p99 from
// the start of the Complete call (a lease read and the commit) to the
// watcher's return, and the watcher's blob GETs per change — the
// request's first read of the record included.
//
//   - same: the watcher and the complete on one engine;
//   - cross: the watcher on engine B, the complete on engine A (one
//     bucket, one notify/mem bus); B's GETs are counted alone.
func BenchmarkWatchLatency(b *testing.B) {
	for _, name := range []string{"same", "cross"} {
		b.Run(name, func(b *testing.B) {
			opts := []harnessOption{withConfig(Config{Bus: notifymem.New()}), wallClock(), withWorkflows("w", single("one", cairn.Step{}))}
			if name == "same" {
				opts = append(opts, counted())
			}
			h := newHarness(b, opts...)
			ctx, a, w, counts := h.ctx, h.e, h.e, h.counts
			if name == "cross" {
				w, counts = h.countedPeer()
			}
			// A complete's own GETs (counted on the same engine), measured
			// without a watcher, are taken off.
			mustStart(b, a, "one", `{}`)
			l := claimOne(b, a, "w")
			before := counts.Snapshot()
			if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
				b.Fatal(err)
			}
			base := counts.Snapshot().Sub(before).Get
			lat := make([]time.Duration, 0, b.N)
			var gets int64
			b.ResetTimer()
			for range b.N {
				id := mustStart(b, a, "one", `{}`)
				l := claimOne(b, a, "w")
				p, err := a.GetRunStatus(ctx, id, 0, 0)
				if err != nil {
					b.Fatal(err)
				}
				before := counts.Snapshot()
				got := make(chan time.Time, 1)
				go func() {
					q, err := w.GetRunStatus(ctx, id, p.Rev, 10*time.Second)
					if err != nil || q.Rev <= p.Rev {
						b.Error("watch:", err, q)
					}
					got <- time.Now()
				}()
				awaitWatched(b, w, id)
				spend(time.Duration(rand.IntN(45)) * time.Millisecond) // the change comes at any moment of the hold
				t0 := time.Now()
				if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-got).Sub(t0))
				gets += counts.Snapshot().Sub(before).Get - base
			}
			b.StopTimer()
			reportLatency(b, lat)
			b.ReportMetric(float64(gets)/float64(b.N), "gets/change")
		})
	}
}

// TestWatchStartsFromARecentCopy: a client that waits on the run it just
// started holds without reading the bucket (the committer's copy of the
// create stands for the first read), and still answers the run's end.
func TestWatchStartsFromARecentCopy(t *testing.T) {
	h := newHarness(t, wallClock(), counted(), withWorkflows("w", single("one", cairn.Step{})))
	e, ctx, counts := h.e, h.ctx, h.counts
	id := mustStart(t, e, "one", `{}`)
	before := counts.Snapshot()
	got := make(chan *cairn.Run, 1)
	go func() {
		r, _, err := e.AwaitRun(ctx, id, 10*time.Second, "k", "getRun")
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	awaitWatched(t, e, id)
	if d := counts.Snapshot().Sub(before); d.Reads() != 0 {
		t.Fatalf("a hold on the run this instance just created read the bucket: %v", d)
	}
	l := claimOne(t, e, "w")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r == nil || r.Status != cairn.RunCompleted {
			t.Fatalf("AwaitRun answered %+v, want the completed run", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitRun did not answer within 10 s of the run's end")
	}
}

// recentOnBChangedOnA starts a run of one step on b (so b holds a recent
// copy of its first revision), then claims and completes the step on a.
// It returns the run and the revision b's copy holds.
func recentOnBChangedOnA(t *testing.T, a, b *Engine) (string, int64) {
	t.Helper()
	ctx := context.Background()
	register(t, a, "w", single("one", cairn.Step{}))
	id := mustStart(t, b, "one", `{}`)
	first := b.runs.Recent(id, time.Minute)
	if first == nil {
		t.Fatal("the instance that started the run holds no copy of it")
	}
	l := claimOne(t, a, "w")
	if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	return id, first.Rev
}

// TestWatchDropsACopyOlderThanANotice: a change made on another instance
// and heard of on the bus drops this instance's older copy, so a request
// that starts holding afterwards reads the change and answers at once,
// not at its fallback read (minutes here).
func TestWatchDropsACopyOlderThanANotice(t *testing.T) {
	h := newHarness(t, withConfig(Config{Bus: notifymem.New(), FallbackInterval: 5 * time.Minute}), wallClock())
	a, b := h.e, h.peer()
	id, rev := recentOnBChangedOnA(t, a, b)
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "B to hear of A's change and drop its copy", func() (bool, string) {
		c := b.runs.Recent(id, time.Minute)
		return c == nil, fmt.Sprintf("B's copy is at rev %v", c)
	})
	t0 := time.Now()
	p, err := b.GetRunStatus(h.ctx, id, rev, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != cairn.RunCompleted || time.Since(t0) > 5*time.Second {
		t.Fatalf("B answered %s rev %d after %v; want the completed run at once", p.Status, p.Rev, time.Since(t0))
	}
}

// TestWatchRecentCopyNotHeardOf: with every notice lost, a request held on
// the instance that started the run (and so holds a recent copy) sees a
// change made elsewhere at its fallback read: the bound of any change
// made elsewhere while it holds.
func TestWatchRecentCopyNotHeardOf(t *testing.T) {
	bus := notifyfaults.DropAll(notifymem.New())
	const fallback = 300 * time.Millisecond
	h := newHarness(t, withConfig(Config{Bus: bus, FallbackInterval: fallback}), wallClock())
	a, b := h.e, h.peer()
	id, rev := recentOnBChangedOnA(t, a, b)
	t0 := time.Now()
	p, err := b.GetRunStatus(h.ctx, id, rev, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); p.Status != cairn.RunCompleted || took > fallback+2*time.Second {
		t.Fatalf("B answered %s rev %d after %v; want the completed run within the %v fallback", p.Status, p.Rev, took, fallback)
	}
}
