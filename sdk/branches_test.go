package sdk

import (
	"context"
	"errors"
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

// Rerun over HTTP: a run whose second step failed is rerun; the first
// step's output is reused (its body does not run again), the second runs
// with it.
func TestRerunAfterAFix(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var fetches, fixed atomic.Int32
	held := make(chan struct{}) // fixed == 2: "use" waits for it, so its run is running
	defer close(held)
	wf := Workflow("fix", "1").
		Task("fetch", Handle(func(StepContext, struct{}) (int, error) { fetches.Add(1); return 41, nil })).
		Task("use", Handle(func(_ StepContext, n int) (int, error) {
			switch fixed.Load() {
			case 0:
				return 0, Fatal(errors.New("bug"))
			case 2:
				<-held
			}
			return n + 1, nil
		}), After("fetch"), Input("${steps.fetch.output}"))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	old := waitRun(t, e.c, start(t, e.c, "fix", StartOptions{}).ID, 10*time.Second)
	if old.Status != RunFailed {
		t.Fatalf("first run %s", old.Status)
	}
	fixed.Store(1)
	nr, err := e.c.Rerun(context.Background(), old.ID, RerunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e.c, nr.ID, 10*time.Second)
	if r.Status != RunCompleted || string(r.Output) != "42" || r.RerunOf != old.ID {
		t.Fatalf("rerun %s output %s rerun_of %q", r.Status, r.Output, r.RerunOf)
	}
	if fetches.Load() != 1 {
		t.Fatalf("fetch ran %d times, want once (reused)", fetches.Load())
	}
	fixed.Store(2) // a run that cannot end before its rerun is asked for (it ended in 80 ms on CI rehearsal 20)
	var ae *APIError
	if _, err := e.c.Rerun(context.Background(), start(t, e.c, "fix", StartOptions{}).ID, RerunOptions{}); !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("rerun of a running run: %v", err)
	}
}
