package sdk

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A workflow's budget of model calls stops a loop of agent steps: the
// attempt whose usage goes over fails the run with class
// budget_exceeded, a failed attempt's calls count, and nothing runs
// after it; a start's own budget replaces the workflow's.
func TestBudgetStopsARun(t *testing.T) {
	e := newEnv(t, fastReap())
	var after atomic.Int32
	call := func(ctx StepContext, _ struct{}) (int, error) {
		ctx.SetUsage(Usage{Counters: map[string]int64{"model_calls": 2}})
		if ctx.Info().Attempt == 1 && ctx.Info().Step == "think" {
			return 0, Retryable(errors.New("rate limited"))
		}
		return 1, nil
	}
	wf := Workflow("agent", "1").Budget(Budget{Counters: map[string]int64{"model_calls": 5}}).
		Task("plan", Handle(call)).
		Task("think", Handle(call), After("plan"), Retry(RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond})).
		Task("act", Handle(func(ctx StepContext, _ struct{}) (int, error) { after.Add(1); return 0, nil }), After("think"))
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))

	r := waitRun(t, e.c, start(t, e.c, "agent", StartOptions{}).ID, 30*time.Second)
	if r.Status != RunFailed || r.Error == nil || r.Error.Class != ClassBudgetExceeded || r.Error.Step != "think" {
		t.Fatalf("run %s %+v, want failed with %s at think", r.Status, r.Error, ClassBudgetExceeded)
	}
	if r.Usage.Counters["model_calls"] != 6 || after.Load() != 0 {
		t.Fatalf("model_calls %d, act ran %d times", r.Usage.Counters["model_calls"], after.Load())
	}
	r = waitRun(t, e.c, start(t, e.c, "agent", StartOptions{Budget: &Budget{Counters: map[string]int64{"model_calls": 100}}}).ID, 30*time.Second)
	if r.Status != RunCompleted || r.Budget == nil || r.Budget.Counters["model_calls"] != 100 || after.Load() != 1 {
		t.Fatalf("with its own budget: run %s %+v budget %+v, act ran %d", r.Status, r.Error, r.Budget, after.Load())
	}
}

// Parallel steps counting into one state key with a sum reducer all
// count.
func TestReducersFromParallelSteps(t *testing.T) {
	e := newEnv(t, fastReap())
	wf := Workflow("tally", "1").Reduce("found", ReduceSum).Reduce("pages", ReduceAppend)
	for _, id := range []string{"a", "b", "c", "d"} {
		wf.Task(id, Handle(func(ctx StepContext, _ struct{}) (int, error) {
			return 1, ctx.SetStatePatch(map[string]any{"found": 2, "pages": []string{id}})
		}))
	}
	serve(t, NewWorker(e.client(t), WithLogger(quiet()), WithConcurrency(4)).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "tally", StartOptions{}).ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.State["found"]) != "8" || len(r.State["pages"]) != len(`["a","b","c","d"]`) {
		t.Fatalf("run %s state %s %s", r.Status, r.State["found"], r.State["pages"])
	}
}

// A step that requires labels runs on the worker that has them, never on
// the one that does not.
func TestLabelRoutedStep(t *testing.T) {
	e := newEnv(t, fastReap())
	var ranOn atomic.Value
	wf := func() *WorkflowDef {
		return Workflow("route", "1").Task("train", Handle(func(ctx StepContext, _ struct{}) (string, error) {
			ranOn.Store(ctx.Info().Worker)
			return ctx.Info().Worker, nil
		}), RequiresLabels(map[string]string{"gpu": "true"}))
	}
	serve(t, NewWorker(e.client(t), WithName("plain"), WithLogger(quiet())).Register(wf()))
	serve(t, NewWorker(e.client(t), WithName("gpu"), WithLabels(map[string]string{"gpu": "true"}), WithLogger(quiet())).Register(wf()))
	for range 3 {
		r := waitRun(t, e.c, start(t, e.c, "route", StartOptions{}).ID, 30*time.Second)
		if r.Status != RunCompleted || ranOn.Load() != "gpu" {
			t.Fatalf("run %s ran on %v", r.Status, ranOn.Load())
		}
	}
}

// A singleton workflow skips a start while its key's run runs, answering
// that run.
func TestSingletonSkipsAStart(t *testing.T) {
	e := newEnv(t, fastReap())
	release := make(chan struct{})
	wf := Workflow("one-sync", "1").Singleton("${input.account}", SingletonSkip).
		Task("sync", Handle(func(ctx StepContext, _ struct{}) (int, error) { <-release; return 1, nil }))
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	first := start(t, e.c, "one-sync", StartOptions{Input: map[string]string{"account": "a1"}})
	again := start(t, e.c, "one-sync", StartOptions{Input: map[string]string{"account": "a1"}})
	other := start(t, e.c, "one-sync", StartOptions{Input: map[string]string{"account": "a2"}})
	close(release)
	if !again.Skipped || again.ID != first.ID || first.Skipped || other.Skipped || other.ID == first.ID {
		t.Fatalf("first %s %v, again %s %v, other %s %v", first.ID, first.Skipped, again.ID, again.Skipped, other.ID, other.Skipped)
	}
	for _, id := range []string{first.ID, other.ID} {
		if r := waitRun(t, e.c, id, 30*time.Second); r.Status != RunCompleted {
			t.Fatalf("run %s: %s", id, r.Status)
		}
	}
}

// A published event cancels the run whose input its cancel_on matches.
func TestCancelOnAPublishedEvent(t *testing.T) {
	e := newEnv(t, fastReap())
	wf := Workflow("order-flow", "1").CancelOn("order.cancelled", "event.payload.order == input.order", 0).
		Task("wait", Handle(func(ctx StepContext, _ struct{}) (int, error) { <-ctx.Done(); return 0, ctx.Err() }))
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	one := start(t, e.c, "order-flow", StartOptions{Input: map[string]int{"order": 1}})
	two := start(t, e.c, "order-flow", StartOptions{Input: map[string]int{"order": 2}})
	res, err := e.c.Publish(t.Context(), "order.cancelled", map[string]int{"order": 2}, PublishOptions{})
	if err != nil || len(res.Cancelled) != 1 || res.Cancelled[0] != two.ID {
		t.Fatalf("publish: %+v %v, want run %s cancelled", res, err, two.ID)
	}
	if r := waitRun(t, e.c, two.ID, 30*time.Second); r.Status != RunCancelled {
		t.Fatalf("run two %s", r.Status)
	}
	if _, err := e.c.Cancel(t.Context(), one.ID, "test over"); err != nil {
		t.Fatal(err)
	}
}
