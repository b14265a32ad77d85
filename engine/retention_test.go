package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// engineKeys lists the bucket's keys, without workflows/ and workers/.
func engineKeys(t testing.TB, e *Engine) []string {
	t.Helper()
	all, err := e.store.ListAll(context.Background(), e.keys.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range all {
		if !strings.HasPrefix(a.Key, "workflows/") && !strings.HasPrefix(a.Key, "workers/") {
			out = append(out, a.Key)
		}
	}
	return out
}

func keysOfRun(keys []string, run string) []string {
	var out []string
	for _, k := range keys {
		if strings.Contains(k, run) {
			out = append(out, k)
		}
	}
	return out
}

// TestRetention: the reaper deletes exactly the runs that ended longer
// than the retention ago, with their leases, idempotency keys and timers,
// and never a running run.
func TestRetention(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, clk, e := h.ctx, h.clk, h.e
		// old: completed by a worker (a lease), started with an idempotency key.
		res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "ret", IdempotencyKey: "k1"})
		if err != nil {
			t.Fatal(err)
		}
		old := res.Run.ID
		l := claimOne(t, e, "w")
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
			t.Fatal(err)
		}
		running := mustStart(t, e, "ret", `{}`) // never claimed: runs forever
		clk.Advance(24 * time.Hour)
		younger := mustStart(t, e, "ret", `{}`)
		if _, err := e.CancelRun(ctx, younger, ""); err != nil {
			t.Fatal(err)
		}
		before := engineKeys(t, e)
		if len(keysOfRun(before, old)) < 3 { // run, lease, timer
			t.Fatalf("old run's objects: %v", keysOfRun(before, old))
		}
		clk.Advance(24*time.Hour + 3*time.Second) // old ended 48h+3s ago, younger 24h+3s
		st := mustReap(t, e)
		if st.RunsDeleted != 1 {
			t.Fatalf("deleted %d runs, want 1", st.RunsDeleted)
		}
		after := engineKeys(t, e)
		var gone []string
		for _, k := range before {
			// Other runs' spent timers go as every pass re-arms them.
			if _, run, isTimer := e.keys.ParseTimer(k); isTimer && run != old {
				continue
			}
			if !slices.Contains(after, k) {
				gone = append(gone, k)
			}
		}
		want := append(keysOfRun(before, old), e.keys.Idempotency("ret", "k1"))
		slices.Sort(want)
		slices.Sort(gone)
		if !slices.Equal(gone, want) {
			t.Fatalf("deleted %v, want exactly %v", gone, want)
		}
		if left := keysOfRun(after, old); len(left) != 0 {
			t.Fatalf("left of the deleted run: %v", left)
		}
		if _, err := e.GetRun(ctx, old); !isNotFoundAPI(err) {
			t.Fatalf("old run: %v", err)
		}
		// The idempotency key is free again.
		if res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "ret", IdempotencyKey: "k1"}); err != nil || res.Existed {
			t.Fatalf("start with a purged key: %+v %v", res, err)
		}
		clk.Advance(100 * 24 * time.Hour)
		mustReap(t, e)
		if _, err := e.GetRun(ctx, younger); !isNotFoundAPI(err) {
			t.Fatalf("younger run after its retention: %v", err)
		}
		if r := getRun(t, e, running); r.Status != cairn.RunRunning {
			t.Fatalf("the running run: %s", r.Status)
		}
	}, withConfig(Config{Retention: 48 * time.Hour}), withClock(schedClock), withWorkflows("w", single("ret", cairn.Step{})))
}

func TestRetentionBatch(t *testing.T) {
	h := newHarness(t, withConfig(Config{Retention: time.Hour, RetentionBatch: 2}), withClock(schedClock), withWorkflows("w", single("ret", cairn.Step{})))
	clk, e := h.clk, h.e
	for range 5 {
		if _, err := e.CancelRun(context.Background(), mustStart(t, e, "ret", `{}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Hour)
	var got []int
	for range 4 {
		got = append(got, mustReap(t, e).RunsDeleted)
	}
	if !slices.Equal(got, []int{2, 2, 1, 0}) {
		t.Fatalf("deleted per pass %v, want [2 2 1 0]", got)
	}
	if keys := engineKeys(t, e); len(keys) != 0 {
		t.Fatalf("left: %v", keys)
	}
}

func TestRetentionDisabled(t *testing.T) {
	h := newHarness(t, withConfig(Config{Retention: -1}), withClock(schedClock), withWorkflows("w", single("ret", cairn.Step{})))
	clk, e := h.clk, h.e
	id := mustStart(t, e, "ret", `{}`)
	if _, err := e.CancelRun(context.Background(), id, ""); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * 365 * 24 * time.Hour)
	mustReap(t, e)
	getRun(t, e, id)
}

func TestDeleteRun(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", single("del", cairn.Step{})))
	ctx, clk, e, counts := h.ctx, h.clk, h.e, h.counts
	id := mustStart(t, e, "del", `{}`)
	var conflict *ConflictError
	if err := e.DeleteRun(ctx, id, false); !errors.As(err, &conflict) {
		t.Fatalf("delete a running run: %v, want a conflict", err)
	}
	getRun(t, e, id)
	if err := e.DeleteRun(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetRun(ctx, id); !isNotFoundAPI(err) {
		t.Fatalf("after delete: %v", err)
	}
	if err := e.DeleteRun(ctx, id, false); !isNotFoundAPI(err) {
		t.Fatalf("delete again: %v", err)
	}
	var val cairn.ValidationError
	if err := e.DeleteRun(ctx, "../x", false); !errors.As(err, &val) {
		t.Fatalf("bad id: %v", err)
	}
	if keys := engineKeys(t, e); len(keys) != 0 {
		t.Fatalf("left: %v", keys)
	}
	// What retention adds to a run: at most one timer write, by the
	// commit that ends it or the reaper visit that finds its last timer
	// spent, at ended_at + retention.
	other := mustStart(t, e, "del", `{}`)
	counts.Reset()
	if _, err := e.CancelRun(ctx, other, ""); err != nil {
		t.Fatal(err)
	}
	t.Logf("ending a run with retention on: %v", counts.Snapshot())
	r, err := e.readRun(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	due := timer.Due(e.retentionDue(r), e.now())
	key := e.keys.Timer(due, retentionTimerPrefix+other)
	if _, err := e.store.Stat(ctx, key); err == nil {
		return // the ending commit armed it
	}
	clk.Advance(time.Hour)
	counts.Reset()
	mustReap(t, e)
	t.Logf("the reaper visit of the ended run: %v", counts.Snapshot())
	if _, err := e.store.Stat(ctx, key); err != nil {
		left, _ := e.store.ListAll(ctx, e.keys.TimersPrefix())
		t.Fatalf("no retention timer %s: %v; timers: %v", key, err, left)
	}
}

// TestRetentionTimersCostScansNothing: ended runs waiting for their
// retention have timers in the index the claims' fallback scan reads;
// the scan skips them without reading the runs.
func TestRetentionTimersCostScansNothing(t *testing.T) {
	h := newHarness(t, wallClock(), counted(), withWorkflows("w", single("ret", cairn.Step{})))
	ctx, e, counts := h.ctx, h.e, h.counts
	for range 20 {
		r, err := e.CancelRun(ctx, mustStart(t, e, "ret", `{}`), "")
		if err != nil {
			t.Fatal(err)
		}
		// The commit's own timer may be a plain one (a routine check
		// armed at start): have one pass of the reaper write the
		// retention timer as it would.
		rec, _ := e.readRun(ctx, r.ID)
		spent := *rec.TimerAt
		if _, err := e.armTimer(ctx, rec, e.now()); err != nil {
			t.Fatal(err)
		}
		if err := e.store.Delete(ctx, e.keys.Timer(spent, r.ID)); err != nil {
			t.Fatal(err)
		}
	}
	counts.Reset()
	e.fallbackScan(ctx)
	if s := counts.Snapshot(); s.Reads() != 0 || s.List != 1 {
		t.Fatalf("a fallback scan over 20 ended runs: %v, want one LIST", s)
	}
}

// timersOfRun lists the timer keys that name run, plain or retention, in
// either layout.
func timersOfRun(t testing.TB, e *Engine, run string) []string {
	t.Helper()
	all, err := e.store.ListAll(context.Background(), e.keys.TimersPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range all {
		if _, name, ok := e.keys.ParseTimer(a.Key); ok && strings.TrimPrefix(name, retentionTimerPrefix) == run {
			out = append(out, a.Key)
		}
	}
	return out
}

// TestDeleteRunDeletesTimers: DELETE /runs/{run} deletes every timer of
// the run, on both key layouts: the retention timer whoever armed it (the
// commit that ended the run records it in TimerAt; the reaper visit that
// finds the run's last timer spent does not), a deadline's timer that the
// retention timer superseded, and the reaper's routine re-arm of a
// running run deleted with force.
func TestDeleteRunDeletesTimers(t *testing.T) {
	for _, layout := range []string{KeyLayoutFlat, KeyLayoutSharded} {
		t.Run(layout, func(t *testing.T) {
			h := newHarness(t, withConfig(Config{Retention: 48 * time.Hour, KeyLayout: layout}), withClock(schedClock))
			ctx, clk, e := h.ctx, h.clk, h.e
			register(t, e, "w", single("del", cairn.Step{}),
				single("nap", cairn.Step{Kind: cairn.KindSleep, Duration: cairn.Duration(365 * 24 * time.Hour)}))

			// Ended by a worker's complete, then visited by the reaper,
			// which arms the retention timer.
			completed := mustStart(t, e, "del", `{}`)
			l := claimOne(t, e, "w")
			if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
				t.Fatal(err)
			}
			// Cancelled, then visited by the reaper.
			cancelled := mustStart(t, e, "del", `{}`)
			if _, err := e.CancelRun(ctx, cancelled, ""); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour)
			mustReap(t, e)
			// Visited by the reaper while running (a routine re-arm), then
			// cancelled: the ending commit arms the retention timer.
			late := mustStart(t, e, "del", `{}`)
			// A year's sleep with a deadline in 200 days, cancelled: the
			// retention timer supersedes the deadline's.
			far := clk.Now().Add(200 * 24 * time.Hour)
			res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "nap", Deadline: &far})
			if err != nil {
				t.Fatal(err)
			}
			sleeper := res.Run.ID
			// Running, visited by the reaper, deleted with force.
			forced := mustStart(t, e, "del", `{}`)
			clk.Advance(time.Hour)
			mustReap(t, e)
			for _, run := range []string{late, sleeper} {
				if _, err := e.CancelRun(ctx, run, ""); err != nil {
					t.Fatal(err)
				}
			}
			for _, run := range []string{completed, cancelled, late, sleeper, forced} {
				before := timersOfRun(t, e, run)
				if run != forced && !strings.Contains(strings.Join(before, " "), "/"+retentionTimerPrefix+run) {
					t.Fatalf("run %s has no retention timer to delete: %v", run, before)
				}
				if run == sleeper && len(before) < 2 {
					t.Fatalf("the cancelled sleep has no deadline timer to delete: %v", before)
				}
				if run == forced && len(before) == 0 {
					t.Fatal("the running run has no timer to delete")
				}
				if err := e.DeleteRun(ctx, run, run == forced); err != nil {
					t.Fatal(err)
				}
				if left := timersOfRun(t, e, run); len(left) != 0 {
					t.Fatalf("run %s deleted; its timers are left: %v (before: %v)", run, left, before)
				}
				if left := keysOfRun(engineKeys(t, e), run); len(left) != 0 {
					t.Fatalf("run %s deleted; left: %v", run, left)
				}
			}
			if keys := engineKeys(t, e); len(keys) != 0 {
				t.Fatalf("left: %v", keys)
			}
		})
	}
}
