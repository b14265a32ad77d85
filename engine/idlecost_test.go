package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
)

// idleTick is how often each simulated idle worker claims: a held claim
// answers empty after the claim hold (24 s by default), and the worker
// claims again at once.
const idleTick = 24 * time.Second

// idleHour is what an idle hour costs on one instance with n registered
// workers that claim every idleTick and find nothing: the requests of
// their claims (worker sightings and the instance's fallback scans
// included, settled), and apart, those of a reaper pass a minute (the
// cloud's schedule). The workers registered and claimed for a warm-up
// hour first, so the hour measured is a steady one.
func idleHour(t *testing.T, n int) (claims, reaper counting.Snapshot) {
	t.Helper()
	h := newHarness(t, counted(), withConfig(Config{ClaimHold: -1}))
	wf := single("idle", cairn.Step{})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("w-%03d", i)
		register(t, h.e, ids[i], wf)
	}
	hour := func() (claims, reaper counting.Snapshot) {
		for at := time.Duration(0); at < time.Hour; at += idleTick {
			before := h.counts.Snapshot()
			for _, id := range ids {
				if ls, err := h.e.Claim(h.ctx, cairn.ClaimRequest{WorkerID: id, Max: 1}); err != nil || len(ls) != 0 {
					t.Fatalf("idle claim by %s: %v %v", id, ls, err)
				}
			}
			h.e.Settle()
			claims = plus(claims, h.counts.Snapshot().Sub(before))
			if at%time.Minute < idleTick {
				before = h.counts.Snapshot()
				h.reap()
				reaper = plus(reaper, h.counts.Snapshot().Sub(before))
			}
			h.clk.Advance(idleTick)
		}
		return claims, reaper
	}
	hour() // warm-up
	return hour()
}

// TestIdleWorkerHour measures what an idle fleet costs the bucket per
// hour, for 1 and 100 idle workers on one instance, and what one status
// read of a run with a ready step costs with 50 dead worker records.
func TestIdleWorkerHour(t *testing.T) {
	for _, n := range []int{1, 100} {
		claims, reaper := idleHour(t, n)
		t.Logf("%d idle workers, one hour: claims %v; per worker %.1f reads %.1f writes; reaper (1/min) %v",
			n, claims, float64(claims.Reads())/float64(n), float64(claims.Writes())/float64(n), reaper)
	}
	got := deadWorkersStatus(t, 50)
	t.Logf("status read with 50 dead worker records: %v (%d requests)", got, got.Total())
}

// deadWorkersStatus is what one status read of a run with a ready step
// costs when n workers registered once and are long gone, and one live
// worker serves the run, on an instance whose reading of the workers list
// has expired.
func deadWorkersStatus(t *testing.T, n int) counting.Snapshot {
	t.Helper()
	h := newHarness(t, counted())
	wf := single("one", cairn.Step{})
	for i := range n {
		register(t, h.e, fmt.Sprintf("dead-%03d", i), wf)
	}
	h.clk.Advance(24 * time.Hour)
	register(t, h.e, "live", wf)
	run := h.start("one", "")
	if _, err := h.e.GetRunStatus(h.ctx, run, 0, 0); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute) // past the instance's reading of the list
	h.e.Settle()
	before := h.counts.Snapshot()
	p, err := h.e.GetRunStatus(h.ctx, run, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.NoLiveWorker {
		t.Fatal("no_live_worker while a live worker serves the run")
	}
	return h.counts.Snapshot().Sub(before)
}

// plus is a and b summed.
func plus(a, b counting.Snapshot) counting.Snapshot {
	return counting.Snapshot{Get: a.Get + b.Get, Stat: a.Stat + b.Stat, Create: a.Create + b.Create, Swap: a.Swap + b.Swap,
		Put: a.Put + b.Put, Delete: a.Delete + b.Delete, List: a.List + b.List}
}
