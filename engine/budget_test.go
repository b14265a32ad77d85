package engine

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// A run's budget counts every attempt's usage, a failed attempt's too: the
// attempt that takes the run over fails the run with class
// budget_exceeded, its retry and the steps after it never run, and a
// start's own budget replaces the workflow's.
func TestRunBudget(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		wf := cairn.Workflow{Name: "spend", Version: "1", Budget: &cairn.Budget{Tokens: 100}, Steps: []cairn.Step{
			{ID: "a"},
			{ID: "b", After: []string{"a"}, Retry: &cairn.RetryPolicy{InitialBackoff: cairn.Duration(time.Millisecond)}},
			{ID: "c", After: []string{"b"}},
		}}
		register(t, e, "w", wf)
		run := mustStart(t, e, "spend", `{}`)
		l := claimOne(t, e, "w")
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Usage: &cairn.Usage{InputTokens: 50, OutputTokens: 10}}); err != nil {
			t.Fatal(err)
		}
		l = claimOne(t, e, "w")
		ended, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable, Message: "try again"},
			Usage: &cairn.Usage{InputTokens: 41}})
		if err != nil {
			t.Fatal(err)
		}
		r := getRun(t, e, run)
		if ended.RunStatus != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassBudgetExceeded || r.Error.Step != "b" {
			t.Fatalf("run %s %+v, want failed with class %s at step b", r.Status, r.Error, cairn.ClassBudgetExceeded)
		}
		if r.Budget == nil || r.Budget.Tokens != 100 || r.Usage.InputTokens+r.Usage.OutputTokens != 101 {
			t.Fatalf("budget %+v usage %+v", r.Budget, r.Usage)
		}
		if b, c := stepOf(r, "b"), stepOf(r, "c"); len(b.Attempts) != 1 || c.Status != cairn.StepCancelled {
			t.Fatalf("b attempts %d, c %s: the retry or a later step ran", len(b.Attempts), c.Status)
		}

		// A start's budget replaces the workflow's: counters this time.
		res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "spend", Budget: &cairn.Budget{Counters: map[string]int64{"searches": 2}}})
		if err != nil {
			t.Fatal(err)
		}
		l = claimOne(t, e, "w")
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Usage: &cairn.Usage{InputTokens: 500, Counters: map[string]int64{"searches": 2}}}); err != nil {
			t.Fatal(err)
		}
		if r := getRun(t, e, res.Run.ID); r.Status != cairn.RunRunning {
			t.Fatalf("500 tokens and 2 searches against a budget of 2 searches: run %s %+v", r.Status, r.Error)
		}
		l = claimOne(t, e, "w")
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Usage: &cairn.Usage{Counters: map[string]int64{"searches": 1}}}); err != nil {
			t.Fatal(err)
		}
		if r := getRun(t, e, res.Run.ID); r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassBudgetExceeded || r.Error.Message != "counter searches at 3 is over the run's budget of 2" {
			t.Fatalf("run %s %+v", r.Status, r.Error)
		}
	})
}

// Budgets are checked where they are given: a definition's at
// registration, a start's at start, each error naming its field.
func TestBudgetValidation(t *testing.T) {
	h := newHarness(t)
	wf := cairn.Workflow{Name: "bad", Version: "1", Budget: &cairn.Budget{CostUSD: -1}, Steps: []cairn.Step{{ID: "a"}}}
	var v cairn.ValidationError
	if _, err := h.e.Register(h.ctx, cairn.RegisterRequest{WorkerID: "w", Workflows: []cairn.Workflow{wf}}); !errors.As(err, &v) || v[0].Field != "workflows[0].budget.cost_usd" {
		t.Fatalf("registration: %v, want an error naming workflows[0].budget.cost_usd", err)
	}
	wf.Budget = nil
	register(t, h.e, "w", wf)
	_, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "bad", Budget: &cairn.Budget{Counters: map[string]int64{"bad name": 1}}})
	if !errors.As(err, &v) || v[0].Field != "budget.counters.bad name" {
		t.Fatalf("start: %v, want an error naming budget.counters.bad name", err)
	}
}
