package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
)

func sagaWorkflow() cairn.Workflow {
	return cairn.Workflow{Name: "saga", Version: "1",
		Steps: []cairn.Step{
			{ID: "reserve"},
			{ID: "charge", After: []string{"reserve"}, Retry: &cairn.RetryPolicy{MaxAttempts: 1}},
			{ID: "ship", After: []string{"charge"}},
		},
		OnFailure: []cairn.Step{
			{ID: "release", Input: json.RawMessage(`{"hold": "${steps.reserve.output}", "why": "${has(steps.charge) ? 'charged' : 'not charged'}"}`)},
			{ID: "apologise", After: []string{"release"}, Input: json.RawMessage(`"${steps.release.output}"`)},
		},
	}
}

func TestCompensationRunsOnFailure(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		run := mustStart(t, e, "saga", `{}`)
		completeNext(t, e, `"hold-7"`)
		l := claimOne(t, e, "w")
		if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "card_declined", Message: "insufficient funds"}}); err != nil {
			t.Fatal(err)
		}
		r := getRun(t, e, run)
		if r.Status != cairn.RunRunning || r.Compensation == nil || r.Compensation.Status != cairn.CompensationRunning {
			t.Fatalf("run %s compensation %+v", r.Status, r.Compensation)
		}
		if s := stepOf(r, "ship").Status; s != cairn.StepCancelled {
			t.Fatalf("ship %s", s)
		}
		l = claimOne(t, e, "w")
		if l.Step != "release" || string(l.Input) != `{"hold":"hold-7","why":"not charged"}` {
			t.Fatalf("lease %s %s", l.Step, l.Input)
		}
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"released"`)}); err != nil {
			t.Fatal(err)
		}
		l = claimOne(t, e, "w")
		if l.Step != "apologise" || string(l.Input) != `"released"` {
			t.Fatalf("lease %s %s", l.Step, l.Input)
		}
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"sorry"`)}); err != nil {
			t.Fatal(err)
		}
		r = getRun(t, e, run)
		if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != "card_declined" || r.Error.Step != "charge" {
			t.Fatalf("run %s %+v: want failed with charge's error", r.Status, r.Error)
		}
		if r.Compensation.Status != cairn.CompensationCompleted || r.Compensation.Failure.Class != "card_declined" {
			t.Fatalf("compensation %+v", r.Compensation)
		}
		if s := stepOf(r, "apologise"); s.Status != cairn.StepCompleted || string(s.Output) != `"sorry"` || s.Kind != cairn.KindTask {
			t.Fatalf("apologise %+v (a compensation step has its kind)", s)
		}
		if r.StepsTotal != len(sagaWorkflow().Steps) {
			t.Fatalf("%d steps counted, want the %d declared (compensation steps not)", r.StepsTotal, len(sagaWorkflow().Steps))
		}
		if countJournal(t, e, run, cairn.JournalCompensationStarted, "") != 1 || countJournal(t, e, run, cairn.JournalCompensationEnded, "") != 1 {
			t.Fatal("compensation not journaled")
		}
	}, wallClock(), withWorkflows("w", sagaWorkflow()))
}

func TestCompensationFailureKeepsTheRunsError(t *testing.T) {
	h := newHarness(t, wallClock())
	ctx, e := h.ctx, h.e
	w := sagaWorkflow()
	w.OnFailure[0].Retry = &cairn.RetryPolicy{MaxAttempts: 1}
	register(t, e, "w", w)
	run := mustStart(t, e, "saga", `{}`)
	completeNext(t, e, `"hold-7"`)
	l := claimOne(t, e, "w")
	e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "card_declined", Message: "no"}})
	l = claimOne(t, e, "w")
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassFatal, Message: "warehouse down"}}); err != nil {
		t.Fatal(err)
	}
	r := getRun(t, e, run)
	if r.Status != cairn.RunFailed || r.Error.Class != "card_declined" {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	if c := r.Compensation; c.Status != cairn.CompensationFailed || c.Error == nil || !strings.Contains(c.Error.Message, "warehouse down") || c.Error.Step != "release" {
		t.Fatalf("compensation %+v", c)
	}
	if s := stepOf(r, "apologise").Status; s != cairn.StepCancelled {
		t.Fatalf("apologise %s", s)
	}
}

func TestCompensationNotOnSuccessOrCancel(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", sagaWorkflow()))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "saga", `{}`)
	for range 3 {
		completeNext(t, e, `"ok"`)
	}
	if r := getRun(t, e, run); r.Status != cairn.RunCompleted || r.Compensation != nil {
		t.Fatalf("run %s %+v", r.Status, r.Compensation)
	}
	run = mustStart(t, e, "saga", `{}`)
	if _, err := e.CancelRun(ctx, run, ""); err != nil {
		t.Fatal(err)
	}
	if r := getRun(t, e, run); r.Status != cairn.RunCancelled || r.Compensation != nil {
		t.Fatalf("run %s %+v", r.Status, r.Compensation)
	}
}

func TestOnFailureValidation(t *testing.T) {
	for _, c := range []struct {
		comp []cairn.Step
		want string
	}{
		{[]cairn.Step{{ID: "reserve"}}, "w.on_failure[0].id: duplicate step id"},
		{[]cairn.Step{{ID: "x", Kind: cairn.KindSleep, Duration: 1}}, "w.on_failure[0].kind: on_failure steps are task steps"},
		{[]cairn.Step{{ID: "x", After: []string{"charge"}}}, `w.on_failure[0].after[0]: unknown on_failure step "charge"`},
		{[]cairn.Step{{ID: "x", After: []string{"y"}}, {ID: "y", After: []string{"x"}}}, "w.on_failure: dependency cycle"},
		{[]cairn.Step{{ID: "x", Input: json.RawMessage(`"${nope(}"`)}}, "w.on_failure[0].input"},
	} {
		w := sagaWorkflow()
		w.OnFailure = c.comp
		_, err := compile(w, "w")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.comp, err, c.want)
		}
	}
}
