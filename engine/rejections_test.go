package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// Every 409 reason, provoked by the sequence that produces it in life.

func TestAlreadyAppliedAfterLostAnswer(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		run, l := h.startStarted("lin", `{"n":1}`, "w")
		h.complete(l.ID, `"a"`)
		// The answer was lost; the worker sends complete again, and
		// fail too: both are already_applied, and nothing changes.
		_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"different"`)})
		wantReason(t, err, cairn.ReasonAlreadyApplied)
		_, err = e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "retryable", Message: "x"}})
		wantReason(t, err, cairn.ReasonAlreadyApplied)
		// A fresh instance (no cache) answers the same.
		_, err = h.peer().Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"a"`)})
		wantReason(t, err, cairn.ReasonAlreadyApplied)
		r := h.run(run)
		if s := stepOf(r, "sa"); string(s.Output) != `"a"` || s.Status != cairn.StepCompleted {
			t.Fatalf("step sa = %s %s", s.Status, s.Output)
		}
		if n := countJournal(t, e, run, "step_completed", "sa"); n != 1 {
			t.Fatalf("%d step_completed entries for sa, want 1", n)
		}
	}, wallClock(), withWorkflows("w", linear("lin", "1", 2)))
}

func TestFencedAfterPausePastExpiry(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		register(t, e, "w2", single("one", cairn.Step{}))
		run, l1 := h.startStarted("one", `{}`, "w1")
		// w1 pauses (GC, laptop lid): no heartbeats past expiry and
		// the recovery window. The reaper reclaims the attempt.
		h.clk.Advance(10*time.Second + 5*time.Second + time.Millisecond)
		if st := h.reap(); st.LeasesLost != 1 {
			t.Fatalf("reaper stats %+v, want one lost lease", st)
		}
		l2 := h.claim("w2")
		if l2.Attempt != 2 || l2.Step != l1.Step {
			t.Fatalf("second lease is attempt %d of %s, want attempt 2 of %s", l2.Attempt, l2.Step, l1.Step)
		}
		// w1 wakes up: every call about its lease is fenced, none applied.
		_, err := e.Heartbeat(ctx, l1.ID)
		wantReason(t, err, cairn.ReasonFenced)
		_, err = e.Complete(ctx, l1.ID, cairn.CompleteRequest{Output: json.RawMessage(`"stale"`)})
		wantReason(t, err, cairn.ReasonFenced)
		_, err = e.Started(ctx, l1.ID)
		wantReason(t, err, cairn.ReasonFenced)
		h.complete(l2.ID, `"fresh"`)
		r := h.run(run)
		if r.Status != cairn.RunCompleted || string(r.Output) != `"fresh"` {
			t.Fatalf("run %s output %s, want completed with the second attempt's output", r.Status, r.Output)
		}
		// The journal names both attempts and who held each.
		s := stepOf(r, "only")
		if len(s.Attempts) != 2 || s.Attempts[0].Worker != "w1" || s.Attempts[0].Outcome != "lost" || s.Attempts[1].Worker != "w2" || s.Attempts[1].Outcome != "completed" {
			t.Fatalf("attempts = %+v", s.Attempts)
		}
	}, withConfig(Config{LeaseTTL: 10 * time.Second, AnnounceAfter: time.Millisecond}), withWorkflows("w1", single("one", cairn.Step{})))
}

func TestRunTerminalAfterCancel(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		run, l := h.startStarted("lin", `{"n":1}`, "w")
		if _, err := e.CancelRun(ctx, run, "operator"); err != nil {
			t.Fatal(err)
		}
		_, err := e.Heartbeat(ctx, l.ID)
		wantReason(t, err, cairn.ReasonRunTerminal)
		_, err = e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)})
		wantReason(t, err, cairn.ReasonRunTerminal)
		// A claim scoped to the ended run is told so too.
		_, err = e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Run: run, WaitMs: 100})
		wantReason(t, err, cairn.ReasonRunTerminal)
		r := h.run(run)
		if r.Status != cairn.RunCancelled || stepOf(r, "sa").Status != cairn.StepCancelled || stepOf(r, "sb").Status != cairn.StepCancelled {
			t.Fatalf("run %s, steps %s %s", r.Status, stepOf(r, "sa").Status, stepOf(r, "sb").Status)
		}
		if _, err := e.CancelRun(ctx, run, ""); err == nil {
			t.Fatal("cancelling an ended run succeeded")
		}
	}, wallClock(), withWorkflows("w", linear("lin", "1", 2)))
}

func TestNotStartedForHandWrittenAtMostOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		run := h.start("pay", `{"amount": 5}`)
		l := h.claim("w")
		if l.Delivery != cairn.AtMostOnce {
			t.Fatalf("lease delivery %s", l.Delivery)
		}
		// A hand-written worker skips started.
		_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"paid"`)})
		wantReason(t, err, cairn.ReasonNotStarted)
		_, err = e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "fatal", Message: "x"}})
		wantReason(t, err, cairn.ReasonNotStarted)
		if r := h.run(run); r.Status != cairn.RunRunning {
			t.Fatalf("run %s after refused calls", r.Status)
		}
		// Done properly, it completes.
		h.started(l.ID)
		h.complete(l.ID, `"paid"`)
		if r := h.run(run); r.Status != cairn.RunCompleted {
			t.Fatalf("run %s", r.Status)
		}
	}, wallClock(), withWorkflows("w", single("pay", cairn.Step{Delivery: cairn.AtMostOnce})))
}

func TestAtMostOnceLostAfterStartFailsNotRerun(t *testing.T) {
	h := newHarness(t, withConfig(Config{LeaseTTL: 10 * time.Second}), withWorkflows("w", single("pay", cairn.Step{Delivery: cairn.AtMostOnce})))
	run, _ := h.startStarted("pay", `{}`, "w")
	h.clk.Advance(time.Minute)
	h.reap()
	r := h.run(run)
	if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassLost {
		t.Fatalf("run %s error %+v, want failed with class lost", r.Status, r.Error)
	}
	// An at_most_once lease lost before it started is offered again.
	run2 := h.start("pay", `{}`)
	l2 := h.claim("w")
	h.clk.Advance(time.Minute)
	h.reap()
	l3 := h.claim("w")
	if l3.Run != run2 || l3.Attempt != l2.Attempt+1 {
		t.Fatalf("re-offer: got attempt %d of run %s", l3.Attempt, l3.Run)
	}
}
