package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// completeLease makes l's complete durable in its lease the way a deferred
// complete does, and folds nothing: the instance died between the two.
func completeLease(t *testing.T, e *Engine, l cairn.Lease, output string) {
	t.Helper()
	ctx := context.Background()
	tok := mustToken(t, l.ID)
	key := e.keys.Lease(tok.Run, tok.Step, tok.Attempt)
	rec, ver, err := readJSON[leaseRecord](ctx, e.store, key)
	if err != nil {
		t.Fatal(err)
	}
	rec.State, rec.Done = leaseCompleted, &leaseDone{Output: json.RawMessage(output), At: e.now()}
	if _, err := e.store.Swap(ctx, key, object.JSON(rec), ver); err != nil {
		t.Fatal(err)
	}
	e.leases.Forget(tok.Run, tok.Step, tok.Attempt)
}

// TestDeferredCompleteFoldedByReaper: a complete made durable in its
// lease by an instance that died before the fold is folded by the
// reaper's visit of the step — even long past the lease's expiry, where an
// active lease would be fenced and the attempt lost — and a later worker
// call on the lease is told already_applied.
func TestDeferredCompleteFoldedByReaper(t *testing.T) {
	h := newHarness(t, withWorkflows("w", linear("lin", "1", 2)))
	ctx, clk, e := h.ctx, h.clk, h.e
	run := mustStart(t, e, "lin", `{"n":1}`)
	l := claimOne(t, e, "w")
	completeLease(t, e, l, `"first"`)
	// The worker's heartbeat fences nothing: the lease is folded first.
	clk.Advance(10 * time.Minute)
	if _, err := e.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	r := getRun(t, e, run)
	s0 := stepOf(r, stepName(0))
	if s0.Status != cairn.StepCompleted || string(s0.Output) != `"first"` || len(s0.Attempts) != 1 {
		t.Fatalf("step after the reaper's fold: %+v", s0)
	}
	_, err := e.Heartbeat(ctx, l.ID)
	wantReason(t, err, cairn.ReasonAlreadyApplied)
	_, err = e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"again"`)})
	wantReason(t, err, cairn.ReasonAlreadyApplied)
	if s := stepOf(getRun(t, e, run), stepName(1)); s.Status != cairn.StepReady {
		t.Fatalf("next step: %+v", s)
	}
}

// TestDeferredCompleteFoldedByWorkerCall: the worker's own retry of the
// complete (its answer lost) folds a completed lease and is answered
// already_applied; a fence after the lease completed is refused by the
// lease's version.
func TestDeferredCompleteFoldedByWorkerCall(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("s", cairn.Step{})))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "s", `{}`)
	l := claimOne(t, e, "w")
	tok := mustToken(t, l.ID)
	stale, ver, err := readJSON[leaseRecord](ctx, e.store, e.keys.Lease(tok.Run, tok.Step, tok.Attempt))
	if err != nil {
		t.Fatal(err)
	}
	completeLease(t, e, l, `7`)
	if err := e.leases.Fence(ctx, stale, ver, "expired"); err == nil {
		t.Fatal("a fence against the version before the complete landed")
	}
	_, err = e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`7`)})
	wantReason(t, err, cairn.ReasonAlreadyApplied)
	if r := getRun(t, e, run); r.Status != cairn.RunCompleted || string(r.Output) == "" {
		t.Fatalf("run %s %s", r.Status, r.Output)
	}
}

// TestDeferredCompleteOnAStaleCopy: a worker's complete is applied by
// instance A through the ordinary path and its answer lost; the retry
// reaches instance B, whose cached copy of the run record predates A's
// write, while B's committer is congested (so B would defer). The retry
// must be answered already_applied, as the record says — not ok from B's
// stale copy (the chaos suite's lease history caught B answering ok).
func TestDeferredCompleteOnAStaleCopy(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", linear("lin", "1", 2)))
	ctx, a, b := h.ctx, h.e, h.peer()
	run := mustStart(t, a, "lin", `{"n":1}`)
	l := claimOne(t, b, "w") // B's claim caches the record
	if _, ok := b.commits.Cache().Shared(run); !ok {
		t.Fatal("B has no cached copy of the run record")
	}
	if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"first"`)}); err != nil {
		t.Fatal(err)
	}
	// B is congested on the run: a throttled write and a batch in flight
	// (a stand-in, so the decision is asked directly: a complete through
	// the committer would queue behind the stand-in forever).
	b.commits.Throttled(run)
	release := b.commits.Hold(run)
	if !b.commits.Congested(run) {
		t.Fatal("B is not congested")
	}
	ended, deferred, err := b.completeDeferred(ctx, mustToken(t, l.ID), cairn.CompleteRequest{Output: json.RawMessage(`"second"`)})
	release()
	if deferred && err == nil {
		t.Fatalf("B answered the retry from its stale copy: %+v", ended)
	}
	_, err = b.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"second"`)})
	wantReason(t, err, cairn.ReasonAlreadyApplied)
	tok := mustToken(t, l.ID)
	rec, _, err := readJSON[leaseRecord](ctx, h.store, b.keys.Lease(tok.Run, tok.Step, tok.Attempt))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State == leaseCompleted {
		t.Fatal("B deferred the retry into the lease")
	}
	if s := stepOf(getRun(t, a, run), stepName(0)); string(s.Output) != `"first"` || len(s.Attempts) != 1 {
		t.Fatalf("step 0: %+v", s)
	}
}
