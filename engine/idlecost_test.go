package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/engine/internal/workers"
)

// idleTick is how often each simulated idle worker claims: a held claim
// answers empty after the claim hold (24 s by default), and the worker
// claims again at once.
const idleTick = 24 * time.Second

// idleHours is what hours idle hours cost on one instance with n
// registered workers that claim every idleTick and find nothing: the
// requests of their claims (worker sightings and the instance's fallback
// scans included, settled), and apart, those of a reaper pass a minute
// (the cloud's schedule). The workers registered and claimed for a
// warm-up hour first, so the hours measured are steady ones.
func idleHours(t *testing.T, n, hours int) (claims, reaper counting.Snapshot) {
	t.Helper()
	h := newHarness(t, counted(), withConfig(Config{ClaimHold: -1}))
	wf := single("idle", cairn.Step{})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("w-%03d", i)
		register(t, h.e, ids[i], wf)
	}
	idle := func(span time.Duration) (claims, reaper counting.Snapshot) {
		for at := time.Duration(0); at < span; at += idleTick {
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
	idle(time.Hour) // warm-up
	return idle(time.Duration(hours) * time.Hour)
}

// TestIdleWorkerHour measures what an idle fleet costs the bucket per
// hour, for 1 and 100 idle workers on one instance, and what one status
// read of a run with a ready step costs with 50 dead worker records.
//
// An idle worker writes nothing (its record is refreshed once per
// workers.RefreshEvery: none in an hour, four in a day) and reads its
// record once per claim cache period (workers.CacheTTL) per instance; the
// instance's fallback scans and the reaper's passes LIST timers/ whatever
// the number of workers; a status read costs the same with 50 dead
// records as with none.
func TestIdleWorkerHour(t *testing.T) {
	for _, n := range []int{1, 100} {
		claims, reaper := idleHours(t, n, 1)
		t.Logf("%d idle workers, one hour: claims %v; per worker %.1f reads %.1f writes; reaper (1/min) %v",
			n, claims, float64(claims.Reads())/float64(n), float64(claims.Writes())/float64(n), reaper)
		if claims.Writes() != 0 || claims.Reads() > int64(n)*int64(time.Hour/workers.CacheTTL) || claims.Delete != 0 {
			t.Errorf("%d idle workers, one hour: %v; want no writes and at most one read per worker per %v", n, claims, workers.CacheTTL)
		}
		if claims.List > int64(time.Hour/DefaultFallbackInterval) || reaper.Total() != reaper.List || reaper.List != 60 {
			t.Errorf("%d idle workers, one hour: claims %v, reaper %v; want at most one LIST per fallback interval and one per pass", n, claims, reaper)
		}
	}
	day, _ := idleHours(t, 1, 24)
	t.Logf("1 idle worker, 24 hours: claims %v", day)
	if want := int64(24 * time.Hour / workers.RefreshEvery); day.Writes() > want {
		t.Errorf("1 idle worker, 24 hours: %d writes, want at most %d (one per %v)", day.Writes(), want, workers.RefreshEvery)
	}
	warm, fresh := deadWorkersStatus(t, 50)
	t.Logf("status read with 50 dead worker records: %v (%d requests); on a fresh instance %v (%d requests)", warm, warm.Total(), fresh, fresh.Total())
	if warm.Total() > 2 || fresh.Total() > 4 {
		t.Errorf("a status read with 50 dead worker records: %d requests, on a fresh instance %d; want at most 2 (the run, the LIST) and 4 (and the definition, the live worker's record)", warm.Total(), fresh.Total())
	}
}

// deadWorkersStatus is what one status read of a run with a ready step
// costs when n workers registered once and are long gone, and one live
// worker serves the run, on an instance whose reading of the workers list
// has expired (warm), and then on another instance (fresh), once the
// first reading deleted the dead workers' records.
func deadWorkersStatus(t *testing.T, n int) (warm, fresh counting.Snapshot) {
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
	status := func(e *Engine, counts *counting.Counts) counting.Snapshot {
		t.Helper()
		before := counts.Snapshot()
		p, err := e.GetRunStatus(h.ctx, run, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.NoLiveWorker {
			t.Fatal("no_live_worker while a live worker serves the run")
		}
		return counts.Snapshot().Sub(before)
	}
	warm = status(h.e, h.counts)
	if ws, err := h.e.ListWorkers(h.ctx); err != nil || len(ws) != 1 {
		t.Fatalf("workers after the dead ones expired: %d %v, want the live one", len(ws), err)
	}
	peer, counts := h.countedPeer()
	return warm, status(peer, counts)
}

// plus is a and b summed.
func plus(a, b counting.Snapshot) counting.Snapshot {
	return counting.Snapshot{Get: a.Get + b.Get, Stat: a.Stat + b.Stat, Create: a.Create + b.Create, Swap: a.Swap + b.Swap,
		Put: a.Put + b.Put, Delete: a.Delete + b.Delete, List: a.List + b.List}
}
