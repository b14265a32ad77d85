package engine

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/notify"
)

// TestLeaseCacheFencedElsewhere: instance A made the lease and holds it
// in its cache; instance B's reaper fences it and re-queues the step. A's
// heartbeat (a swap against the cached version) and complete (decided on
// the run record) are both refused as fenced, as with a read.
func TestLeaseCacheFencedElsewhere(t *testing.T) {
	h := newHarness(t, withWorkflows("w", single("f", cairn.Step{})))
	ctx, a, b := h.ctx, h.e, h.peer()
	run := h.start("f", `{}`)
	l := h.claim("w")
	if _, _, ok := a.leases.Cached(mustToken(t, l.ID)); !ok {
		t.Fatal("the lease A made is not in its cache")
	}
	h.clk.Advance(time.Minute)
	if st, err := b.Reap(ctx); err != nil || st.LeasesLost != 1 {
		t.Fatalf("reap on B: %+v %v", st, err)
	}
	_, err := a.Heartbeat(ctx, l.ID)
	wantReason(t, err, cairn.ReasonFenced)
	_, err = a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)})
	wantReason(t, err, cairn.ReasonFenced)
	if s := stepOf(getRun(t, b, run), "only"); s.Status != cairn.StepReady || s.Attempt != 2 {
		t.Fatalf("step after the fence: %+v", s)
	}
}

// TestLeaseCacheCompleteBeforeRecovery: B fences A's lease but has not
// yet applied the loss to the run record when A's complete (proven from
// its cache) lands: the complete wins, B's recovery then changes nothing,
// and nobody was told "fenced" before the step completed.
func TestLeaseCacheCompleteBeforeRecovery(t *testing.T) {
	h := newHarness(t, withWorkflows("w", single("g", cairn.Step{})))
	ctx, b := h.ctx, h.peer()
	run := h.start("g", `{}`)
	l := h.claim("w")
	tok := mustToken(t, l.ID)
	rec, ver, err := readJSON[leaseRecord](ctx, h.store, b.keys.Lease(tok.Run, tok.Step, tok.Attempt))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.leases.Fence(ctx, rec, ver, "expired"); err != nil { // the reaper's first write only
		t.Fatal(err)
	}
	h.complete(l.ID, `1`)
	d, err := b.definition(ctx, "g", "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.recoverAttempt(ctx, run, d, rec, "expired", &ReapStats{}); err != nil {
		t.Fatal(err)
	}
	r := getRun(t, b, run)
	if r.Status != cairn.RunCompleted || stepOf(r, "only").Attempt != 1 {
		t.Fatalf("run after complete then recovery: %s %+v", r.Status, stepOf(r, "only"))
	}
	// A heartbeat now reads the fenced lease and is told already_applied:
	// its own complete won.
	_, err = b.Heartbeat(ctx, l.ID)
	wantReason(t, err, cairn.ReasonAlreadyApplied)
}

// TestLeaseCacheAtMostOnceStartedElsewhere: an at_most_once lease made on
// A and started through B: A's cached copy lacks started_at, so A reads
// the lease and accepts the complete (not refused as not_started).
func TestLeaseCacheAtMostOnceStartedElsewhere(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("m", cairn.Step{Delivery: cairn.AtMostOnce})))
	b := h.peer()
	run := h.start("m", `{}`)
	l := h.claim("w")
	if _, _, ok := h.e.leases.Cached(mustToken(t, l.ID)); ok {
		t.Fatal("an unstarted at_most_once lease must not be trusted from the cache")
	}
	if _, err := b.Started(h.ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	h.complete(l.ID, `1`)
	if r := h.run(run); r.Status != cairn.RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
}

// TestClaimStaleCacheReadsAgain: a claim whose cached copy of the run is
// older than the work it is told of (the step not ready there) decides it
// on one fresh read and gets the lease: a stale copy costs a read, never
// the work.
func TestClaimStaleCacheReadsAgain(t *testing.T) {
	h := newHarness(t, counted(), wallClock(), withWorkflows("w", linear("lin", "1", 2)))
	ctx, a, b, counts := h.ctx, h.e, h.uncountedPeer(), h.counts
	run := h.start("lin", `{"n":1}`) // A caches rev 0: s0 ready, s1 pending
	l0 := claimOne(t, b, "w")        // B finds s0 by its fallback scan
	if _, err := b.Complete(ctx, l0.ID, cairn.CompleteRequest{Output: json.RawMessage(`"o"`)}); err != nil {
		t.Fatal(err)
	}
	// A hears of s1 without a revision (as from the reaper's announce).
	a.hub.Add(notify.Hint{Run: run, Workflow: "lin", Version: "1", Step: stepName(1), Attempt: 1})
	a.rotation.Begin(a.now(), 0) // no fallback scan: only the hint
	a.seen("w")                  // the worker's sighting (a read of its record), not counted
	a.Settle()
	counts.Reset()
	// A's hub also still holds the start's hint for s0 (taken by B).
	ls, err := a.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 10, WaitMs: 0})
	if err != nil || len(ls) != 1 || ls[0].Step != stepName(1) {
		t.Fatalf("claim on the stale instance: %v %v", ls, err)
	}
	if got := counts.Snapshot().Get; got != 1 {
		t.Fatalf("%d reads, want 1 (the fresh read after the stale copy)", got)
	}
	if _, err := a.Complete(ctx, ls[0].ID, cairn.CompleteRequest{Output: json.RawMessage(`"o"`)}); err != nil {
		t.Fatal(err)
	}
	if r := getRun(t, a, run); r.Status != cairn.RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
}

// TestLeaseCacheRace: two instances renew the same leases concurrently
// (each renewal moves the lease's version under the other's cache) while
// A completes them: every renewal answers or is refused, every complete
// lands once, and the run completes.
func TestLeaseCacheRace(t *testing.T) {
	const width = 16
	h := newHarness(t, wallClock(), withWorkflows("w", fanOut("race", width)))
	ctx, a, b := h.ctx, h.e, h.peer()
	run := h.start("race", `{}`)
	var leases []cairn.Lease
	for len(leases) < width {
		ls, err := a.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 100, WaitMs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			t.Fatalf("claimed %d of %d", len(leases), width)
		}
		leases = append(leases, ls...)
	}
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Go(func() {
			var hw sync.WaitGroup
			for j := range 6 {
				e := a
				if (i+j)%2 == 1 {
					e = b
				}
				hw.Go(func() {
					if _, err := e.Heartbeat(ctx, l.ID); err != nil {
						if _, ok := IsRejection(err); !ok {
							t.Error(err)
						}
					}
				})
			}
			if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
				t.Error(err)
			}
			hw.Wait()
		})
	}
	wg.Wait()
	join := claimOne(t, b, "w")
	if _, err := b.Complete(ctx, join.ID, cairn.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
	r := getRun(t, b, run)
	if r.Status != cairn.RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
	for _, s := range r.Steps {
		if len(s.Attempts) != 1 {
			t.Fatalf("step %s: %d attempts", s.ID, len(s.Attempts))
		}
	}
}

func mustToken(t testing.TB, id string) leaseToken {
	t.Helper()
	tok, err := keys.ParseLease(id)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
