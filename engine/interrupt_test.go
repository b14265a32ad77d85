package engine

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
)

// interruptLease interrupts lease l with payload, which must be applied.
func interruptLease(t testing.TB, h *harness, l cairn.Lease, payload string) {
	t.Helper()
	if _, err := h.e.Interrupt(h.ctx, l.ID, cairn.InterruptRequest{Payload: json.RawMessage(payload), Usage: &cairn.Usage{Counters: map[string]int64{"calls": 1}}}); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
}

// TestInterruptAndResume: a body's interrupt leaves its step interrupted
// with the payload, spends no retry budget, offers no attempt and arms no
// timer (the reaper leaves it); the resume offers the next attempt at
// once with resumed, the value and the payload; a second interrupt and
// resume answer again. Resuming again with the same value writes nothing;
// another value, or a step not interrupted, is a conflict; an ended run
// refuses the resume.
func TestInterruptAndResume(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		run, l := h.startStarted("lin", `{"n": 1}`, "w")
		interruptLease(t, h, l, `{"question": "ok?"}`)
		r := wantStep(t, h, run, cairn.RunRunning, "sa", cairn.StepInterrupted)
		sa := stepOf(r, "sa")
		if string(sa.Interrupt) != `{"question":"ok?"}` && string(sa.Interrupt) != `{"question": "ok?"}` || sa.Failures != 0 || sa.Attempts[0].Outcome != cairn.OutcomeInterrupted {
			t.Fatalf("interrupted step: %+v", sa)
		}
		if r.Usage.Counters["calls"] != 1 {
			t.Fatalf("the interrupted attempt's usage was not counted: %+v", r.Usage)
		}
		claimNothing(t, e, "w", "claim while interrupted")
		h.clk.Advance(time.Hour)
		h.reap()
		claimNothing(t, e, "w", "claim after a reaper pass")
		var ce *ConflictError
		if _, err := e.ResumeStep(ctx, run, "sb", nil, "k"); !errors.As(err, &ce) {
			t.Fatalf("resume of a pending step: %v, want a conflict", err)
		}
		if _, err := e.ResumeStep(ctx, run, "nope", nil, "k"); !isNotFoundAPI(err) {
			t.Fatalf("resume of an unknown step: %v, want not found", err)
		}
		if r, err := e.ResumeStep(ctx, run, "sa", json.RawMessage(`"yes"`), "k"); err != nil || stepOf(r, "sa").Status != cairn.StepReady {
			t.Fatalf("resume: %v", err)
		}
		rev := runRev(t, e, run)
		if _, err := e.ResumeStep(ctx, run, "sa", json.RawMessage(`"yes"`), "k"); err != nil || runRev(t, e, run) != rev {
			t.Fatalf("resume again with the same value: %v (rev %d → %d)", err, rev, runRev(t, e, run))
		}
		if _, err := e.ResumeStep(ctx, run, "sa", json.RawMessage(`"no"`), "k"); !errors.As(err, &ce) {
			t.Fatalf("resume again with another value: %v, want a conflict", err)
		}
		l2 := h.claim("w")
		if l2.Step != "sa" || l2.Attempt != 2 || !l2.Resumed || string(l2.Resume) != `"yes"` || len(l2.Interrupt) == 0 {
			t.Fatalf("resumed lease: %+v", l2)
		}
		h.started(l2.ID)
		interruptLease(t, h, l2, `"again?"`)
		if _, err := e.ResumeStep(ctx, run, "sa", json.RawMessage(`"no"`), "k"); err != nil {
			t.Fatalf("second resume: %v", err)
		}
		l3 := h.claim("w")
		if string(l3.Resume) != `"no"` || string(l3.Interrupt) != `"again?"` {
			t.Fatalf("second resumed lease: %+v", l3)
		}
		h.started(l3.ID)
		h.complete(l3.ID, `1`)
		wantStep(t, h, run, cairn.RunRunning, "sa", cairn.StepCompleted)
		if n := countJournal(t, e, run, cairn.JournalStepResumed, "sa"); n != 2 {
			t.Fatalf("%d step_resumed entries, want 2", n)
		}
		if _, err := e.CancelRun(ctx, run, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ResumeStep(ctx, run, "sa", nil, "k"); !errors.As(err, &ce) {
			t.Fatalf("resume in an ended run: %v, want a conflict", err)
		}
	}, withWorkflows("w", linear("lin", "1", 3)))
}

// TestInterruptRefusals: a payload that is not JSON or too large is
// refused before anything is read; a paused run's resumed step is offered
// at the run's resume; a cancelled run's interrupted step is cancelled.
func TestInterruptRefusals(t *testing.T) {
	h := newHarness(t, withWorkflows("w", linear("lin", "1", 2)))
	run, l := h.startStarted("lin", "", "w")
	for _, p := range []string{`{`, `"` + string(make([]byte, cairn.MaxInterruptBytes)) + `"`} {
		var ve cairn.ValidationError
		if _, err := h.e.Interrupt(h.ctx, l.ID, cairn.InterruptRequest{Payload: json.RawMessage(p)}); !errors.As(err, &ve) || ve[0].Field != "payload" {
			t.Fatalf("interrupt with a bad payload: %v", err)
		}
	}
	interruptLease(t, h, l, "")
	pauseRun(t, h.e, run)
	if _, err := h.e.ResumeStep(h.ctx, run, "sa", nil, "k"); err != nil {
		t.Fatal(err)
	}
	claimNothing(t, h.e, "w", "claim of a resumed step while its run is paused")
	resumeRun(t, h.e, run)
	l2 := h.claim("w")
	if !l2.Resumed || string(l2.Resume) != "null" {
		t.Fatalf("resumed lease: %+v", l2)
	}
	h.started(l2.ID)
	interruptLease(t, h, l2, `1`)
	if _, err := h.e.CancelRun(h.ctx, run, ""); err != nil {
		t.Fatal(err)
	}
	wantStep(t, h, run, cairn.RunCancelled, "sa", cairn.StepCancelled)
}

// TestInterruptRequests: what an interrupt and a resume cost in bucket
// requests on the instance that holds the run (docs/DECISIONS.md,
// "Interrupting a step"): the interrupt is one swap of the run record,
// as a complete is; the resume one swap and its audit record is the
// API's, not counted here; the resumed attempt's claim one lease create.
func TestInterruptRequests(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", single("one", cairn.Step{ID: "s"})))
	run := h.start("one", "")
	l := h.claim("w")
	h.e.Settle()
	measure := func(what string, want counting.Snapshot, f func()) {
		t.Helper()
		h.e.Settle()
		h.counts.Reset()
		f()
		h.e.Settle()
		if got := h.counts.Snapshot(); got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	measure("interrupt", counting.Snapshot{Swap: 1}, func() { interruptLease(t, h, l, `"q"`) })
	measure("resume", counting.Snapshot{Swap: 1}, func() {
		if _, err := h.e.ResumeStep(h.ctx, run, "s", nil, "k"); err != nil {
			t.Fatal(err)
		}
	})
	measure("resume again", counting.Snapshot{Get: 1}, func() {
		if _, err := h.e.ResumeStep(h.ctx, run, "s", nil, "k"); err != nil {
			t.Fatal(err)
		}
	})
	measure("claim of the resumed attempt", counting.Snapshot{Create: 1}, func() { l = h.claim("w") })
	interruptLease(t, h, l, `"again"`)
	cold, coldCounts := h.countedPeer()
	h.e.Settle()
	coldCounts.Reset()
	if _, err := cold.ResumeStep(h.ctx, run, "s", json.RawMessage(`1`), "k"); err != nil {
		t.Fatal(err)
	}
	cold.Settle()
	if got, want := coldCounts.Snapshot(), (counting.Snapshot{Get: 2, Swap: 1}); got != want {
		t.Errorf("resume on a cold instance: %s, want %s", got, want)
	}
}
