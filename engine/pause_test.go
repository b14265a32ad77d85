package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
)

// pauseRun and resumeRun pause and resume run on e, which must accept it,
// and check the status they answer.
func pauseRun(t testing.TB, e *Engine, run string) {
	t.Helper()
	if r, err := e.PauseRun(context.Background(), run); err != nil || r.Status != cairn.RunPaused {
		t.Fatalf("pause %s: %v", run, err)
	}
}

func resumeRun(t testing.TB, e *Engine, run string) *cairn.Run {
	t.Helper()
	r, err := e.ResumeRun(context.Background(), run)
	if err != nil || r.Status == cairn.RunPaused {
		t.Fatalf("resume %s: %v", run, err)
	}
	return r
}

// claimNothing checks that a claim for worker gets no lease.
func claimNothing(t testing.TB, e *Engine, worker, why string) {
	t.Helper()
	ls, err := e.Claim(context.Background(), cairn.ClaimRequest{WorkerID: worker, Max: 10})
	if err != nil || len(ls) != 0 {
		t.Fatalf("%s: claimed %d leases (%v), want none", why, len(ls), err)
	}
}

// runRev is run's revision: its number of committed writes.
func runRev(t testing.TB, e *Engine, run string) int64 {
	t.Helper()
	p, err := e.GetRunStatus(context.Background(), run, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.Rev
}

// wantStep checks the status of a run and of one of its steps.
func wantStep(t testing.TB, h *harness, run string, status cairn.RunStatus, step string, st cairn.StepStatus) *cairn.Run {
	t.Helper()
	r := h.run(run)
	if r.Status != status || stepOf(r, step).Status != st {
		t.Fatalf("run %s, step %s %s; want %s, %s", r.Status, step, stepOf(r, step).Status, status, st)
	}
	return r
}

// TestPauseLeasedStep: a step leased when its run is paused goes on, and
// its complete is applied; the next step is not started, nor offered to a
// worker (held claims, scoped claims, eager claims, the reaper's
// announcements), until the resume, which offers it at once. Pause and
// resume again write nothing; an ended run refuses both.
func TestPauseLeasedStep(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		run, l := h.startStarted("lin", `{"n": 1}`, "w")
		pauseRun(t, e, run)
		rev := runRev(t, e, run)
		pauseRun(t, e, run) // again: nothing written
		if got := runRev(t, e, run); got != rev {
			t.Fatalf("a second pause wrote: rev %d → %d", rev, got)
		}
		if _, err := e.Heartbeat(ctx, l.ID); err != nil {
			t.Fatalf("heartbeat of a paused run's attempt: %v", err)
		}
		ended, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), ClaimNext: &cairn.ClaimNext{Max: 5}})
		if err != nil || len(ended.Leases) != 0 {
			t.Fatalf("complete with claim_next: %+v %v", ended, err)
		}
		wantStep(t, h, run, cairn.RunPaused, "sa", cairn.StepCompleted)
		wantStep(t, h, run, cairn.RunPaused, "sb", cairn.StepPending)
		claimNothing(t, e, "w", "claim while paused")
		if ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Run: run}); err != nil || len(ls) != 0 {
			t.Fatalf("scoped claim while paused: %d leases, %v", len(ls), err)
		}
		h.clk.Advance(time.Hour)
		h.reap()
		claimNothing(t, e, "w", "claim after a reaper pass while paused")
		resumeRun(t, e, run)
		if l2 := h.claim("w"); l2.Run != run || l2.Step != "sb" {
			t.Fatalf("after the resume: lease of %s %s", l2.Run, l2.Step)
		}
		if n := countJournal(t, e, run, cairn.JournalRunPaused, ""); n != 1 {
			t.Fatalf("%d run_paused entries, want 1", n)
		}
		if _, err := e.CancelRun(ctx, run, ""); err != nil {
			t.Fatal(err)
		}
		for _, f := range []func(context.Context, string) (*cairn.Run, error){e.PauseRun, e.ResumeRun} {
			var ce *ConflictError
			if _, err := f(ctx, run); !errors.As(err, &ce) {
				t.Fatalf("pause or resume of an ended run: %v, want a conflict", err)
			}
		}
	}, withWorkflows("w", linear("lin", "1", 3)))
}

// TestPauseHoldsDueTimes: a sleep, a retry backoff and a wait's timeout
// that come due while their run is paused are not acted on (the reaper's
// passes leave them, and the run needs no timer), and act at the resume.
func TestPauseHoldsDueTimes(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		e := h.e
		nap, wait := h.start("nap", ""), h.start("waits", "")
		retry := h.start("flaky", "")
		l := h.claim("w")
		if _, err := e.Fail(h.ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable, Message: "again"}}); err != nil {
			t.Fatal(err)
		}
		for _, run := range []string{nap, wait, retry} {
			pauseRun(t, e, run)
		}
		h.clk.Advance(2 * time.Minute)
		h.reap()
		h.clk.Advance(time.Hour)
		h.reap()
		wantStep(t, h, nap, cairn.RunPaused, "nap", cairn.StepSleeping)
		wantStep(t, h, wait, cairn.RunPaused, "w", cairn.StepWaiting)
		claimNothing(t, e, "w", "claim of a due retry while paused")
		resumeRun(t, e, nap)
		wantStep(t, h, nap, cairn.RunRunning, "nap", cairn.StepCompleted)
		wantStep(t, h, nap, cairn.RunRunning, "after", cairn.StepReady)
		if r := resumeRun(t, e, wait); r.Status != cairn.RunFailed || stepOf(r, "w").Error.Class != cairn.ClassTimeout {
			t.Fatalf("wait resumed past its timeout: run %s, step %+v", r.Status, stepOf(r, "w"))
		}
		resumeRun(t, e, retry)
		got := map[string]string{}
		for range 2 {
			l := h.claim("w")
			got[l.Run] = l.Step
		}
		if got[nap] != "after" || got[retry] != "s" {
			t.Fatalf("claims after the resumes: %v", got)
		}
	}, withWorkflows("w",
		cairn.Workflow{Name: "nap", Version: "1", Steps: []cairn.Step{{ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Minute)}, {ID: "after", After: []string{"nap"}}}},
		single("waits", cairn.Step{ID: "w", Kind: cairn.KindWait, Event: "go", WaitTimeout: cairn.Duration(time.Minute)}),
		single("flaky", cairn.Step{ID: "s", Retry: &cairn.RetryPolicy{MaxAttempts: 3, InitialBackoff: cairn.Duration(time.Minute)}})))
}

// TestPauseDeadlineKeepsCounting: a run's deadline keeps counting while it
// is paused, and one that passed meanwhile times the run out at its
// resume, not before (an event to the paused run does not).
func TestPauseDeadlineKeepsCounting(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		dl := h.clk.Now().Add(time.Minute)
		res, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "waits", Deadline: &dl})
		if err != nil {
			t.Fatal(err)
		}
		run := res.Run.ID
		pauseRun(t, h.e, run)
		h.clk.Advance(2 * time.Minute)
		h.reap()
		if _, err := h.e.SendEvent(h.ctx, run, cairn.EventRequest{Name: "other"}); err != nil {
			t.Fatalf("event to a paused run past its deadline: %v", err)
		}
		wantStep(t, h, run, cairn.RunPaused, "w", cairn.StepWaiting)
		if r := resumeRun(t, h.e, run); r.Status != cairn.RunTimedOut {
			t.Fatalf("resumed past its deadline: %s, want timed_out", r.Status)
		}
	}, withWorkflows("w", single("waits", cairn.Step{ID: "w", Kind: cairn.KindWait, Event: "go"})))
}

// TestPauseMapOffersNoItem: no item of a paused run's map is offered; an
// item held at the pause completes, and the rest are offered at resume.
func TestPauseMapOffersNoItem(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := h.start("items", `{"xs": [1, 2, 3]}`)
		l := h.claim("w")
		pauseRun(t, h.e, run)
		h.complete(l.ID, `10`)
		claimNothing(t, h.e, "w", "claim of a paused run's map items")
		resumeRun(t, h.e, run)
		for range 2 {
			h.complete(h.claim("w").ID, `10`)
		}
		settleFlows(h.e)
		if r := h.run(run); r.Status != cairn.RunCompleted {
			t.Fatalf("run %s after its items", r.Status)
		}
	}, withWorkflows("w", cairn.Workflow{Name: "items", Version: "1", Steps: []cairn.Step{{ID: "each", Kind: cairn.KindMap, Items: "input.xs", MaxConcurrency: 1}}}))
}

// TestPauseParentOfChild: pausing a parent does not pause its child run;
// the child's end is recorded on the parent's child step, and the step
// after it starts at the parent's resume.
func TestPauseParentOfChild(t *testing.T) {
	h := newHarness(t, withWorkflows("w", parentChildWorkflows()...))
	e := h.e
	run := h.start("parent", `{}`)
	completeNext(t, e, `"o-1"`)
	settleFlows(e)
	pauseRun(t, e, run)
	l := h.claim("w") // the child's step: the child runs
	h.complete(l.ID, `{"tracking": "T9"}`)
	settleFlows(e)
	wantStep(t, h, run, cairn.RunPaused, "ship", cairn.StepCompleted)
	wantStep(t, h, run, cairn.RunPaused, "done", cairn.StepPending)
	claimNothing(t, e, "w", "claim of the paused parent")
	resumeRun(t, e, run)
	if l := h.claim("w"); l.Run != run || l.Step != "done" || string(l.Input) != `"T9"` {
		t.Fatalf("after the resume: %s %s %s", l.Run, l.Step, l.Input)
	}
}

// TestPauseFunctionSuspension: a function run's suspended attempt is not
// offered while its run is paused, even past its sleep's end.
func TestPauseFunctionSuspension(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := h.start("fn", `{}`)
		l := h.claim("w")
		until := h.clk.Now().Add(time.Minute)
		sleep := cairn.Operation{ID: "/nap#0", Seq: 0, Kind: cairn.OpSleep, Status: cairn.OpCompleted, WakeAt: &until}
		if _, err := h.e.Checkpoint(h.ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{sleep}, Suspend: &cairn.Suspension{Until: &until}}); err != nil {
			t.Fatal(err)
		}
		pauseRun(t, h.e, run)
		h.clk.Advance(2 * time.Minute)
		h.reap()
		claimNothing(t, h.e, "w", "claim of a paused function's attempt")
		resumeRun(t, h.e, run)
		if l2 := h.claim("w"); l2.Attempt != 2 || len(l2.History) != 1 {
			t.Fatalf("after the resume: attempt %d, history %v", l2.Attempt, l2.History)
		}
	}, withWorkflows("w", fnWorkflow("fn")))
}

// TestPausedRunIsKept: a paused run has not ended, so the retention never
// deletes it, however long it stays paused.
func TestPausedRunIsKept(t *testing.T) {
	h := newHarness(t, withConfig(Config{Retention: time.Hour}), withWorkflows("w", single("one", cairn.Step{ID: "s"})))
	run := h.start("one", "")
	pauseRun(t, h.e, run)
	for range 3 {
		h.clk.Advance(24 * time.Hour)
		h.reap()
	}
	if r := h.run(run); r.Status != cairn.RunPaused {
		t.Fatalf("run %s", r.Status)
	}
}

// TestPauseRaces: pauses, resumes, a cancel and workers' completes of one
// run race (under -race): every call either applies or is refused as the
// run's state says, and the run ends cancelled.
func TestPauseRaces(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := h.start("lin", `{"n": 1}`)
		es := h.instances(2)
		var wg sync.WaitGroup
		for i, e := range es {
			wg.Go(func() {
				for j := range 20 {
					f := e.PauseRun
					if (i+j)%2 == 1 {
						f = e.ResumeRun
					}
					if _, err := f(h.ctx, run); err != nil && !isConflict(err) {
						t.Errorf("pause or resume: %v", err)
					}
				}
			})
			wg.Go(func() {
				for range 10 {
					ls, err := e.Claim(h.ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1})
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					for _, l := range ls {
						if _, err := e.Complete(h.ctx, l.ID, cairn.CompleteRequest{}); err != nil {
							if _, ok := IsRejection(err); !ok {
								t.Errorf("complete: %v", err)
							}
						}
					}
				}
			})
		}
		wg.Go(func() {
			if _, err := es[1].CancelRun(h.ctx, run, "race"); err != nil && !isConflict(err) {
				t.Errorf("cancel: %v", err)
			}
		})
		wg.Wait()
		if r := h.run(run); r.Status != cairn.RunCancelled && r.Status != cairn.RunCompleted {
			t.Fatalf("run %s after the race, want it ended", r.Status)
		}
	}, wallClock(), withWorkflows("w", linear("lin", "1", 20)))
}

// TestBatchPauseResume: a pause batch pauses the running runs of a
// workflow (and leaves another's alone); a resume batch over the paused
// ones resumes them, and their steps are offered again.
func TestBatchPauseResume(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		var runs []string
		for range 3 {
			runs = append(runs, h.start("one", ""))
		}
		other := h.start("nap", "")
		batch := func(action string, filter cairn.BatchFilter) {
			t.Helper()
			b, err := h.e.Batches().Start(h.ctx, cairn.BatchRequest{Action: action, Filter: filter})
			if err != nil || !b.Done() || b.Applied != len(runs) || b.Failed != 0 {
				t.Fatalf("%s batch: %+v %v", action, b, err)
			}
		}
		batch(cairn.BatchPause, cairn.BatchFilter{Workflow: "one"})
		for _, run := range runs {
			wantStep(t, h, run, cairn.RunPaused, "s", cairn.StepReady)
		}
		wantStep(t, h, other, cairn.RunRunning, "nap", cairn.StepSleeping)
		claimNothing(t, h.e, "w", "claim of the paused runs")
		batch(cairn.BatchResume, cairn.BatchFilter{Status: []cairn.RunStatus{cairn.RunPaused}})
		for range runs {
			h.claim("w")
		}
	}, withWorkflows("w", single("one", cairn.Step{ID: "s"}),
		cairn.Workflow{Name: "nap", Version: "1", Steps: []cairn.Step{{ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Minute)}}}))
}

// TestPauseRequests: what a pause and a resume cost in bucket requests.
// On the instance whose cache holds the run each is one swap of the run
// record (the pause arms no timer: a paused run needs none; the resume's
// run still has its timer from before, else it writes one); doing either
// again writes nothing and reads the record once, to be sure the cached
// copy is current. A cold instance first reads the record and the
// workflow's definition.
func TestPauseRequests(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", single("one", cairn.Step{ID: "s"})))
	run := h.start("one", "")
	cold, coldCounts := h.countedPeer()
	step := func(what string, counts *counting.Counts, f func(context.Context, string) (*cairn.Run, error), want counting.Snapshot) {
		t.Helper()
		counts.Reset()
		if _, err := f(h.ctx, run); err != nil {
			t.Fatal(err)
		}
		if got := counts.Snapshot(); got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	step("pause", h.counts, h.e.PauseRun, counting.Snapshot{Swap: 1})
	step("pause again", h.counts, h.e.PauseRun, counting.Snapshot{Get: 1})
	step("resume", h.counts, h.e.ResumeRun, counting.Snapshot{Swap: 1})
	step("resume again", h.counts, h.e.ResumeRun, counting.Snapshot{Get: 1})
	step("pause on a cold instance", coldCounts, cold.PauseRun, counting.Snapshot{Get: 2, Swap: 1})
	step("resume on it", coldCounts, cold.ResumeRun, counting.Snapshot{Swap: 1})
}
