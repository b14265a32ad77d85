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

// TestLoopWithNext: a review step routes back to its draft until the
// draft is long enough; the run completes with the last review, each
// step's visits counted in the view and seen by the draft's template.
func TestLoopWithNext(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	type draft struct{ Words int }
	wf := Workflow("essay", "1").
		Task("draft", Handle(func(ctx StepContext, in struct{ Visit int }) (draft, error) {
			return draft{Words: 100 * in.Visit}, nil
		}), Input(map[string]string{"visit": "${visit}"})).
		Task("review", Handle(func(ctx StepContext, _ struct{}) (map[string]bool, error) {
			var d draft
			if err := ctx.Output("draft", &d); err != nil {
				return nil, err
			}
			return map[string]bool{"ok": d.Words >= 300}, nil
		}), After("draft"), Next("draft", "!steps.review.output.ok"), MaxVisits(5))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	run := start(t, e.c, "essay", StartOptions{})
	done := waitRun(t, e.c, run.ID, 30*time.Second)
	if done.Status != RunCompleted || string(done.Output) != `{"ok":true}` {
		t.Fatalf("run %s, output %s, error %+v", done.Status, done.Output, done.Error)
	}
	if d, r := done.Step("draft"), done.Step("review"); d.Visits != 3 || r.Visits != 3 {
		t.Fatalf("visits: draft %d, review %d; want 3 each", d.Visits, r.Visits)
	}
}
