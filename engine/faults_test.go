package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
)

// TestCompleteSurvivesCrashBetweenWrites kills the API instance (makes
// the store fail) at every blob write that a complete makes, before and
// after the write lands, then retries the complete on a fresh instance as
// a worker would. Each time the step ends exactly once and the run
// advances — on every store.
func TestCompleteSurvivesCrashBetweenWrites(t *testing.T) {
	ctx := context.Background()
	// How many writes does a complete make? Count them on a clean run:
	// the run record swap, plus a timer when the run needs a new one.
	writesOf := func() int {
		h := newHarness(t, counted(), wallClock(), withWorkflows("w", linear("lin", "1", 2)))
		e, c := h.e, h.counts
		mustStart(t, e, "lin", `{"n":1}`)
		l := claimOne(t, e, "w")
		e.Settle() // the claim's worker sighting is not the complete's
		before := c.Snapshot()
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"x"`)}); err != nil {
			t.Fatal(err)
		}
		return int(c.Snapshot().Sub(before).Writes())
	}
	n := writesOf()
	if n < 1 {
		t.Fatalf("complete made %d writes", n)
	}
	for name, open := range stores(t) {
		for k := 0; k < n; k++ {
			for _, after := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/write%d/after=%v", name, k, after), func(t *testing.T) {
					h := newHarness(t, onStore(open(t)), withFaults(faults.Profile{}), wallClock(), withWorkflows("w", linear("lin", "1", 2)))
					e, ctl := h.e, h.faults
					run := mustStart(t, e, "lin", `{"n":1}`)
					l := claimOne(t, e, "w")
					e.Settle() // the claim's worker sighting is not the complete's
					crash := errors.New("instance killed")
					ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate, faults.OpSwap, faults.OpPut}, Skip: k, Times: 1, After: after, Err: crash})
					_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"x"`)})
					if err == nil {
						t.Fatal("complete succeeded through an injected crash")
					}
					ctl.Clear()
					// The worker retries against another instance.
					e2 := h.peer()
					_, err = e2.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"x"`)})
					if reason, ok := IsRejection(err); err != nil && (!ok || reason != cairn.ReasonAlreadyApplied) {
						t.Fatalf("retried complete: %v", err)
					}
					r := getRun(t, e2, run)
					if s := stepOf(r, "sa"); s.Status != cairn.StepCompleted || len(s.Attempts) != 1 {
						t.Fatalf("step sa %s with %d attempts", s.Status, len(s.Attempts))
					}
					if s := stepOf(r, "sb"); s.Status != cairn.StepReady {
						t.Fatalf("run did not advance: sb is %s", s.Status)
					}
					if c := countJournal(t, e2, run, "step_completed", "sa"); c != 1 {
						t.Fatalf("sa completed %d times", c)
					}
					// And the next step is claimable and finishes the run.
					l2 := claimOne(t, e2, "w")
					if _, err := e2.Complete(ctx, l2.ID, cairn.CompleteRequest{Output: json.RawMessage(`"y"`)}); err != nil {
						t.Fatal(err)
					}
					if r := getRun(t, e2, run); r.Status != cairn.RunCompleted {
						t.Fatalf("run %s", r.Status)
					}
				})
			}
		}
	}
}

// TestFanOutUnderGCSProfile runs 200 parallel steps on a store that
// behaves like GCS (write latency, one write per second per object name,
// 429 beyond) and reports how many writes the run record took: group
// commit folds many completions into one write. The profile wraps every
// store, so the folding is shown on each one's real conditional writes.
func TestFanOutUnderGCSProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200-step fan-out under a GCS latency profile; run without -short")
	}
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			const width = 200
			// Time scaled by 0.2: 16–140 ms writes, 5 writes/s per object.
			h := newHarness(t, onStore(open(t)), withFaults(faults.GCS.Scaled(0.2)), wallClock(), withWorkflows("w", fanOut("fan", width)))
			e, ctl := h.e, h.faults
			start := time.Now()
			run := mustStart(t, e, "fan", `{}`)
			done := make(chan error, 16)
			for i := range 16 {
				go func() {
					for {
						ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 8, WaitMs: 200})
						if err != nil {
							done <- err
							return
						}
						if len(ls) == 0 {
							if r := getRun(t, e, run); r.Status.Terminal() {
								done <- nil
								return
							}
						}
						for _, l := range ls {
							for {
								_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(fmt.Sprint(i))})
								var u *UnavailableError
								if errors.As(err, &u) {
									spend(50 * time.Millisecond)
									continue // throttled: nothing applied, retry
								}
								if err != nil {
									done <- err
									return
								}
								break
							}
						}
					}
				}()
			}
			for range 16 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			r, err := e.readRun(ctx, run)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != cairn.RunCompleted {
				t.Fatalf("run %s", r.Status)
			}
			steps := width + 1
			ratio := float64(steps) / float64(r.Rev)
			t.Logf("fan-out of %d steps under GCS profile (x0.2): %v, run record written %d times (%.1f steps per write), %d writes throttled",
				width, time.Since(start).Round(time.Millisecond), r.Rev, ratio, ctl.Stats().Throttled)
			if r.Rev >= int64(steps)/3 {
				t.Fatalf("run record took %d writes for %d steps: group commit is not folding completions", r.Rev, steps)
			}
		})
	}
}

var _ = blob.ErrNotFound
