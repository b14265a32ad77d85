package engine

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairn-dev/cairn"
)

// chain a → b → c, with d beside (after a).
func rerunWorkflow() cairn.Workflow {
	return cairn.Workflow{Name: "rr", Version: "1", Steps: []cairn.Step{
		{ID: "a"},
		{ID: "b", After: []string{"a"}, Input: json.RawMessage(`"${steps.a.output}"`)},
		{ID: "c", After: []string{"b"}},
		{ID: "d", After: []string{"a"}},
	}}
}

func TestRerunReusesCompletedSteps(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", rerunWorkflow()))
	ctx, e := h.ctx, h.e
	old := mustStart(t, e, "rr", `{"n": 1}`)
	completeNext(t, e, `"A"`)
	// d completes, then b fails for good.
	ls := map[string]cairn.Lease{}
	for len(ls) < 2 {
		l := claimOne(t, e, "w")
		ls[l.Step] = l
	}
	if _, err := e.Complete(ctx, ls["d"].ID, cairn.CompleteRequest{Output: json.RawMessage(`"D"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Fail(ctx, ls["b"].ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassFatal, Message: "boom"}}); err != nil {
		t.Fatal(err)
	}
	if r := getRun(t, e, old); r.Status != cairn.RunFailed {
		t.Fatalf("old run %s", r.Status)
	}

	running := mustStart(t, e, "rr", `{}`)
	if _, err := e.RerunRun(ctx, running, cairn.RerunRequest{}); !isConflict(err) {
		t.Fatalf("rerun of a running run: %v, want a conflict", err)
	}
	if _, err := e.CancelRun(ctx, running, ""); err != nil {
		t.Fatal(err)
	}

	res, err := e.RerunRun(ctx, old, cairn.RerunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	nr := res.Run
	if nr.RerunOf != old || nr.ID == old {
		t.Fatalf("rerun %s of %s", nr.ID, nr.RerunOf)
	}
	if a := nr.Step("a"); a.Status != cairn.StepCompleted || string(a.Output) != `"A"` || len(a.Attempts) != 0 {
		t.Fatalf("a not reused: %+v", a)
	}
	// b runs again with a's reused output as its input; c follows.
	seen := map[string]bool{}
	for !getRun(t, e, nr.ID).Status.Terminal() {
		l := claimOne(t, e, "w")
		if l.Run != nr.ID {
			t.Fatalf("leased a step of run %s", l.Run)
		}
		seen[l.Step] = true
		if l.Step == "b" && string(l.Input) != `"A"` {
			t.Fatalf("b input %s", l.Input)
		}
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"ok"`)}); err != nil {
			t.Fatal(err)
		}
	}
	if !seen["b"] || !seen["c"] || seen["a"] || seen["d"] {
		t.Fatalf("ran %v: want b and c only", seen)
	}
	if r := getRun(t, e, nr.ID); r.Status != cairn.RunCompleted {
		t.Fatalf("rerun %s %+v", r.Status, r.Error)
	}

	// From a step: it and everything after it run again.
	res2, err := e.RerunRun(ctx, nr.ID, cairn.RerunRequest{FromStep: "a", IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.RerunRun(ctx, nr.ID, cairn.RerunRequest{FromStep: "a", IdempotencyKey: "k"})
	if err != nil || again.Run.ID != res2.Run.ID || !again.Existed {
		t.Fatalf("idempotent rerun: %v %+v", err, again)
	}
	for _, s := range res2.Run.Steps {
		if s.Status == cairn.StepCompleted {
			t.Fatalf("step %s reused, want every step after a to run again", s.ID)
		}
	}
	var ve cairn.ValidationError
	if _, err := e.RerunRun(ctx, nr.ID, cairn.RerunRequest{FromStep: "nope"}); !errors.As(err, &ve) || ve[0].Field != "from_step" {
		t.Fatalf("unknown from_step: %v", err)
	}
}

func isConflict(err error) bool {
	var c *ConflictError
	return errors.As(err, &c)
}
