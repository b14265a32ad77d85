package engine

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
)

// A run with a ready step says no_live_worker when no worker seen alive
// serves its workflow@version: not while its worker is alive, once that
// worker has not been seen for longer than the alive window (the reading
// older than its 15 s), and no longer once a worker registers. A run that
// only waits for an event never reads the workers list for it.
func TestNoLiveWorker(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store, counts := counting.Wrap(mem.New())
	e := newTestEngine(t, store, Config{Now: clk.Now})
	register(t, e, "w1", single("one", cairn.Step{ID: "s"}), single("waits", cairn.Step{ID: "w", Kind: cairn.KindWait, Event: "go"}))
	run := mustStart(t, e, "one", `{}`)

	status := func() *cairn.RunProgress {
		t.Helper()
		p, err := e.GetRunStatus(ctx, run, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := status(); p.NoLiveWorker {
		t.Fatal("no_live_worker while w1, registered just now, serves the run")
	}
	clk.Advance(e.workerAliveWindow() + time.Second)
	if p := status(); !p.NoLiveWorker {
		t.Fatal("no no_live_worker once w1 has not been seen for longer than the alive window")
	}
	if r := getRun(t, e, run); !r.NoLiveWorker {
		t.Fatal("GetRun lacks no_live_worker")
	}
	register(t, e, "w2", single("one", cairn.Step{ID: "s"}))
	if p := status(); p.NoLiveWorker {
		t.Fatal("no_live_worker after w2 registered on this instance")
	}

	// A waiting run has nothing ready: no LIST for liveness.
	waiting := mustStart(t, e, "waits", `{}`)
	clk.Advance(e.workerAliveWindow() + time.Minute)
	before := counts.Snapshot()
	p, err := e.GetRunStatus(ctx, waiting, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.NoLiveWorker || counts.Snapshot().Sub(before).List != 0 {
		t.Fatalf("a waiting run: no_live_worker %v, %d LISTs", p.NoLiveWorker, counts.Snapshot().Sub(before).List)
	}
	if s := p.Steps[0]; s.Kind != cairn.KindWait || s.Event != "go" {
		t.Fatalf("a wait step's progress: %+v", s)
	}
}

// ReadHolders fills in who holds each ready step: none before the claim,
// the claiming worker after, with one lease read per ready step.
func TestReadHolders(t *testing.T) {
	ctx := context.Background()
	store, counts := counting.Wrap(mem.New())
	e := newTestEngine(t, store, Config{})
	wf := cairn.Workflow{Name: "fan", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	register(t, e, "w1", wf)
	run := mustStart(t, e, "fan", `{}`)
	p, err := e.GetRunStatus(ctx, run, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := counts.Snapshot()
	if err := e.ReadHolders(ctx, p); err != nil {
		t.Fatal(err)
	}
	if reads := counts.Snapshot().Sub(before).Reads(); reads != 3 {
		t.Errorf("ReadHolders of 3 ready steps made %d reads, want 3", reads)
	}
	for _, s := range p.Steps {
		if s.Holder != nil {
			t.Fatalf("step %s held before any claim: %+v", s.ID, s.Holder)
		}
	}
	ls, err := e.Claim(ctx, ClaimRequest{WorkerID: "w1", Max: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	if err := e.ReadHolders(ctx, p); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, s := range p.Steps {
		if s.Holder != nil {
			held++
			if s.ID != ls[0].Step || s.Holder.Worker != "w1" {
				t.Errorf("step %s held by %+v; the claim took %s", s.ID, s.Holder, ls[0].Step)
			}
		}
	}
	if held != 1 || p.HoldersTruncated {
		t.Fatalf("%d steps held (truncated %v), want 1", held, p.HoldersTruncated)
	}
}
