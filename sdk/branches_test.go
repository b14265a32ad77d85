package sdk

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// When over HTTP: the branch not taken never reaches a worker, the join
// runs, and the run view says skipped.
func TestWhenBranches(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var refunds, rejects atomic.Int32
	wf := Workflow("refund", "1").
		Task("check", Handle(func(_ StepContext, in struct{ Amount int }) (map[string]bool, error) {
			return map[string]bool{"eligible": in.Amount < 100}, nil
		})).
		Task("refund", Handle(func(StepContext, struct{}) (string, error) { refunds.Add(1); return "refunded", nil }),
			After("check"), When("steps.check.output.eligible")).
		Task("reject", Handle(func(StepContext, struct{}) (string, error) { rejects.Add(1); return "rejected", nil }),
			After("check"), When("!steps.check.output.eligible")).
		Task("reply", Handle(func(_ StepContext, in map[string]string) (string, error) { return in["outcome"], nil }),
			After("refund", "reject"), Input(map[string]any{"outcome": "${has(steps.refund) ? steps.refund.output : steps.reject.output}"}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "refund", StartOptions{Input: map[string]int{"amount": 250}}).ID, 10*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"rejected"` {
		t.Fatalf("run %s output %s %+v", r.Status, r.Output, r.Error)
	}
	if refunds.Load() != 0 || rejects.Load() != 1 {
		t.Fatalf("refund ran %d, reject ran %d", refunds.Load(), rejects.Load())
	}
	if s := r.Step("refund"); s.Status != StepSkipped || len(s.Attempts) != 0 {
		t.Fatalf("refund step %+v", s)
	}
	if r.StepsDone != 4 || r.StepsTotal != 4 {
		t.Fatalf("steps %d/%d", r.StepsDone, r.StepsTotal)
	}
}
