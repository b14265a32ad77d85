package sdk

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestInterruptAndResumeStep: a body that interrupts leaves its step
// interrupted with the payload (the run goes on running); ResumeStep runs
// it again with Resumed true, the answer and the payload, and the run
// completes with what the body made of the answer. Resuming it again with
// another answer is a conflict.
func TestInterruptAndResumeStep(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	type question struct{ Question string }
	wf := Workflow("approve", "1").
		Task("ask", Handle(func(ctx StepContext, _ struct{}) (map[string]any, error) {
			var answer struct{ Approved bool }
			if ok, err := ctx.Resumed(&answer); err != nil || !ok {
				ctx.SetUsage(Usage{Counters: map[string]int64{"drafts": 1}})
				return nil, Interrupt(question{"approve the draft?"})
			}
			var q question
			if ok, err := ctx.Interrupted(&q); err != nil || !ok {
				return nil, Fatal(err)
			}
			return map[string]any{"approved": answer.Approved, "asked": q.Question}, nil
		}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	run := start(t, e.c, "approve", StartOptions{})
	eventually(t, 30*time.Second, "the step interrupted", func() bool {
		r, err := e.c.Get(ctx, run.ID)
		return err == nil && r.Step("ask").Status == StepInterrupted
	})
	r, _ := e.c.Get(ctx, run.ID)
	var q question
	if err := json.Unmarshal(r.Step("ask").Interrupt, &q); err != nil || q.Question != "approve the draft?" || r.Status != RunRunning || r.Usage.Counters["drafts"] != 1 {
		t.Fatalf("interrupted run: %s, step %+v (%v)", r.Status, r.Step("ask"), err)
	}
	if _, err := e.c.ResumeStep(ctx, run.ID, "ask", map[string]bool{"approved": true}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	done := waitRun(t, e.c, run.ID, 30*time.Second)
	var out struct {
		Approved bool
		Asked    string
	}
	if err := done.Decode(&out); err != nil || done.Status != RunCompleted || !out.Approved || out.Asked != q.Question {
		t.Fatalf("run %s, output %s (%v)", done.Status, done.Output, err)
	}
	if _, err := e.c.ResumeStep(ctx, run.ID, "ask", false); !IsConflict(err) {
		t.Fatalf("resume of an ended run: %v, want a conflict", err)
	}
}

// TestFunctionInterrupts: a durable function's body may interrupt too;
// its resumed attempt replays what it recorded and reads the answer.
func TestFunctionInterrupts(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	calls := 0
	wf := Workflow("fn-approve", "1").Function("f", func(fc *Durable) (any, error) {
		n, err := Step(fc, "count", func(context.Context) (int, error) { calls++; return calls, nil })
		if err != nil {
			return nil, err
		}
		var answer string
		if ok, err := fc.Resumed(&answer); err != nil || !ok {
			return nil, Interrupt("name?")
		}
		return map[string]any{"n": n, "answer": answer}, nil
	})
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	run := start(t, e.c, "fn-approve", StartOptions{})
	eventually(t, 30*time.Second, "the function interrupted", func() bool {
		r, err := e.c.Get(ctx, run.ID)
		return err == nil && r.Step("f").Status == StepInterrupted
	})
	if _, err := e.c.ResumeStep(ctx, run.ID, "f", "ana"); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, e.c, run.ID, 30*time.Second)
	if done.Status != RunCompleted || string(done.Output) != `{"answer":"ana","n":1}` || calls != 1 {
		t.Fatalf("run %s, output %s, %d calls (want the recorded one replayed)", done.Status, done.Output, calls)
	}
}
