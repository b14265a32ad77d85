package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// TestFallbackScanFindsReadyWorkBehindABacklog: with no bus, a step made
// ready on one instance (here by an event, whose hint stays in that
// instance's hub, where no claim waits) is found by a claim waiting on
// another instance through its fallback scan — within a few fallback
// intervals, even when more runs than one scan reads (scanRuns) have
// timers due before it: runs whose steps are leased and busy. Each scan
// goes on where the previous one stopped instead of reading the same
// first runs of the timer index every time (the MinIO no-bus chaos round
// saw steps after waits and sleeps found minutes late; the reaper's
// re-announcements reach no other instance without a bus).
func TestFallbackScanFindsReadyWorkBehindABacklog(t *testing.T) {
	ctx := context.Background()
	clk := &runningClock{}
	cfg := Config{FallbackInterval: 50 * time.Millisecond, Now: clk.Now}
	a := newTestEngine(t, nil, cfg)
	b := newTestEngine(t, a.store, cfg)
	const backlog = 48
	run := readyBehindBacklog(t, a, b, clk, backlog)
	if st := stepOf(getRun(t, a, run), "t"); st.Status != cairn.StepReady {
		t.Fatalf("step t is %s after the event, want ready", st.Status)
	}

	// B never saw the hint: only its fallback scans can find the step.
	start := time.Now()
	ls, err := b.Claim(ctx, cairn.ClaimRequest{WorkerID: "idle-worker", Max: 1, WaitMs: 3000})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(ls) != 1 || ls[0].Run != run || ls[0].Step != "t" {
		t.Fatalf("a claim on the other instance got %v after %v; want step t of run %s within a few %v fallback scans behind %d busy runs",
			ls, took.Round(time.Millisecond), run, cfg.FallbackInterval, backlog)
	}
	t.Logf("found behind %d busy runs in %v (fallback every %v)", backlog, took.Round(time.Millisecond), cfg.FallbackInterval)
}

// TestFirstScanStartsAnywhere: an instance's first fallback scan starts
// where scanStart says among the due runs, not always at the first. Each
// started at the first, instances restarted more often than a rotation
// takes (chaos rounds kill them every few seconds) read the same 16 runs
// again and again, and work behind them waited for the reaper's visits to
// reorder the index: a ready attempt of a 1-minute round waited 20 s with
// free slots waiting. Here the only ready step's run is the last of 49;
// one scan (the interval is an hour) finds it only when it starts there.
func TestFirstScanStartsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(n int) int
		found bool
	}{
		{"at the last run", func(n int) int { return n - 1 }, true},
		{"at the first run", func(int) int { return 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := &runningClock{}
			cfg := Config{FallbackInterval: time.Hour, Now: clk.Now}
			a := newTestEngine(t, nil, cfg)
			b := newTestEngine(t, a.store, cfg)
			var asked int
			b.rotation.Start = func(n int) int { asked = n; return tc.start(n) }
			const backlog = 48
			run := readyBehindBacklog(t, a, b, clk, backlog)
			ls, err := b.Claim(ctx, cairn.ClaimRequest{WorkerID: "idle-worker", Max: 1, WaitMs: 300})
			if err != nil {
				t.Fatal(err)
			}
			if asked != backlog+1 {
				t.Fatalf("the first scan chose its start among %d runs, want %d", asked, backlog+1)
			}
			if got := len(ls) == 1 && ls[0].Run == run; got != tc.found {
				t.Fatalf("one scan starting %s found the ready step: %v, want %v (leases %v)", tc.name, got, tc.found, ls)
			}
		})
	}
}

// timersBehind checks what the tests above arrange: every timer of run is
// due in a later bucket than every timer of the n other runs (the
// backlog), so a scan of the timer index in due order reads it last.
func timersBehind(t *testing.T, e *Engine, run string, n int) {
	t.Helper()
	ts, err := e.store.ListAll(context.Background(), e.keys.TimersPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var first, lastOther time.Time
	others := map[string]bool{}
	for _, a := range ts {
		due, id, ok := e.keys.ParseTimer(a.Key)
		switch {
		case !ok:
			t.Fatalf("timer key %q does not parse", a.Key)
		case id == run:
			if first.IsZero() || due.Before(first) {
				first = due
			}
		default:
			others[id] = true
			lastOther = maxTime(lastOther, due)
		}
	}
	if len(others) != n || first.IsZero() || !first.After(lastOther) {
		t.Fatalf("run %s's first timer is due at %v, the last of the %d other runs' at %v; want it behind %d runs' timers",
			run, first.Format("15:04:05.000"), len(others), lastOther.Format("15:04:05.000"), n)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readyBehindBacklog makes, through a, backlog runs whose only step is
// leased (busy-worker holds them; 3×scanRuns for 48), then one run whose
// step t is made ready by an event on a, its timer in a later bucket
// than every backlog run's, and returns it. b serves its workflow
// (idle-worker) and never saw the hint: only its fallback scans can find
// the step.
func readyBehindBacklog(t *testing.T, a, b *Engine, clk *runningClock, backlog int) string {
	t.Helper()
	ctx := context.Background()
	register(t, a, "busy-worker", single("hold", cairn.Step{ID: "busy"}))
	register(t, b, "idle-worker", cairn.Workflow{Name: "wt", Version: "1", Steps: []cairn.Step{
		{ID: "w", Kind: cairn.KindWait, Event: "go"},
		{ID: "t", After: []string{"w"}},
	}})
	for range backlog {
		mustStart(t, a, "hold", "")
	}
	for got := 0; got < backlog; {
		ls, err := a.Claim(ctx, cairn.ClaimRequest{WorkerID: "busy-worker", Max: backlog - got, WaitMs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			t.Fatalf("claimed %d of %d backlog steps", got, backlog)
		}
		got += len(ls)
	}
	clk.Advance(keys.TimerBucket + 100*time.Millisecond) // the wait run's timer behind every backlog run's
	run := mustStart(t, a, "wt", "")
	if _, err := a.SendEvent(ctx, run, cairn.EventRequest{Name: "go"}); err != nil {
		t.Fatal(err)
	}
	timersBehind(t, a, run, backlog)
	return run
}

// TestScanWhileLocalHintsTrickle: with no bus, a step made ready on
// instance B, where no claim waits, is found by instance A's fallback scan
// even while A's claims keep getting local work — one step at a time, so
// the worker has free slots. A claim used to scan only when it came back
// empty, so the chaos rounds saw such steps wait 15–29 s behind a trickle
// of local hints (issue #23).
func TestScanWhileLocalHintsTrickle(t *testing.T) {
	h := newHarness(t, withConfig(Config{FallbackInterval: 200 * time.Millisecond}), wallClock())
	ctx, a, b := h.ctx, h.e, h.peer()
	register(t, a, "w", linear("chain", "1", 40), single("other", cairn.Step{}))
	register(t, b, "w", linear("chain", "1", 40), single("other", cairn.Step{}))
	mustStart(t, a, "chain", `{"n": 1}`)
	far := mustStart(t, b, "other", `{}`) // its hint is in B's hub only
	start := time.Now()
	for round := 0; ; round++ {
		ls, err := a.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 4, WaitMs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		chain := 0
		for _, l := range ls {
			if l.Run == far {
				t.Logf("the step made ready on B was leased on A after %v, in claim round %d of the 40-step local chain", time.Since(start).Round(time.Millisecond), round)
				if round >= 39 {
					t.Fatalf("leased only once A's local chain was done (round %d): no scan while claims got local hints", round)
				}
				return
			}
			chain++
			if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
				t.Fatal(err)
			}
		}
		if chain == 0 && len(ls) == 0 {
			t.Fatalf("round %d: an empty claim before the far step was leased", round)
		}
		spend(50 * time.Millisecond) // the worker's body
	}
}
