package engine

import (
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// A worker that stopped is gone until it registers again: a claim it
// abandoned that reaches the server after its stop (a sighting) does not
// bring it back; its next registration does.
func TestStoppedWorkerStaysGoneUntilItRegisters(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", single("one", cairn.Step{})))
	ctx, e := h.ctx, h.e
	alive := func() (bool, bool) {
		t.Helper()
		e.Settle()
		w := soleWorker(t, e)
		return w.Alive, w.StoppedAt != nil
	}
	if a, s := alive(); !a || s {
		t.Fatalf("registered: alive %v stopped %v", a, s)
	}
	if err := e.StopWorker(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(WorkerSeenEvery) // a sighting after the stop
	if _, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 1}); err != nil {
		t.Fatal(err)
	}
	if a, s := alive(); a || !s {
		t.Fatalf("stopped, then a late claim: alive %v stopped %v; want gone", a, s)
	}
	register(t, e, "w1", single("one", cairn.Step{}))
	if a, s := alive(); !a || s {
		t.Fatalf("registered again: alive %v stopped %v", a, s)
	}
	if err := e.StopWorker(ctx, "nobody"); !errs.IsNotFound(err) {
		t.Fatalf("stopping an unknown worker: %v", err)
	}
}
