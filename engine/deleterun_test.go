package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

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
			if _, err := e.Complete(ctx, l.ID, CompleteRequest{}); err != nil {
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
			res, err := e.StartRun(ctx, StartRequest{Workflow: "nap", Deadline: &far})
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
