package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
)

// routeWorkflow branches on classify's output: bug and feature are the
// two branches, archive follows bug only (skipped with it), notify joins
// both and learns which ran with has().
func routeWorkflow() cairn.Workflow {
	return cairn.Workflow{Name: "route", Version: "1", Steps: []cairn.Step{
		{ID: "classify"},
		{ID: "bug", After: []string{"classify"}, When: "steps.classify.output.kind == 'bug'"},
		{ID: "feature", After: []string{"classify"}, When: "${steps.classify.output.kind == 'feature'}"},
		{ID: "archive", After: []string{"bug"}},
		{ID: "notify", After: []string{"bug", "feature"},
			Input: json.RawMessage(`{"took": "${has(steps.bug) ? 'bug' : 'feature'}"}`)},
	}}
}

// completeNext claims one lease and completes it with output; it returns
// the lease.
func completeNext(t *testing.T, e *Engine, output string) cairn.Lease {
	t.Helper()
	l := claimOne(t, e, "w")
	if _, err := e.Complete(context.Background(), l.ID, cairn.CompleteRequest{Output: json.RawMessage(output)}); err != nil {
		t.Fatalf("complete %s: %v", l.Step, err)
	}
	return l
}

func TestWhenBranchesSkipAndJoin(t *testing.T) {
	for _, kind := range []string{"bug", "feature"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t, wallClock(), withWorkflows("w", routeWorkflow()))
			e := h.e
			run := mustStart(t, e, "route", `{}`)
			completeNext(t, e, `{"kind": "`+kind+`"}`)
			ran := map[string]bool{}
			var notifyInput json.RawMessage
			for range 5 {
				r := getRun(t, e, run)
				if r.Status.Terminal() {
					break
				}
				l := completeNext(t, e, `"done"`)
				ran[l.Step] = true
				if l.Step == "notify" {
					notifyInput = l.Input
				}
			}
			r := getRun(t, e, run)
			if r.Status != cairn.RunCompleted {
				t.Fatalf("run %s %+v", r.Status, r.Error)
			}
			other := map[string]string{"bug": "feature", "feature": "bug"}[kind]
			if !ran[kind] || ran[other] || !ran["notify"] {
				t.Fatalf("ran %v: want %s and notify, not %s", ran, kind, other)
			}
			if got := stepOf(r, other).Status; got != cairn.StepSkipped {
				t.Fatalf("%s is %s, want skipped", other, got)
			}
			// archive follows bug only: skipped with it, run without it.
			if got, want := stepOf(r, "archive").Status, map[string]cairn.StepStatus{"bug": cairn.StepCompleted, "feature": cairn.StepSkipped}[kind]; got != want {
				t.Fatalf("archive is %s, want %s", got, want)
			}
			if kind == "bug" != ran["archive"] {
				t.Fatalf("archive ran %v for %s", ran["archive"], kind)
			}
			if string(notifyInput) != `{"took":"`+kind+`"}` {
				t.Fatalf("notify input %s", notifyInput)
			}
			if r.StepsDone != r.StepsTotal {
				t.Fatalf("steps done %d of %d: skipped steps count as done", r.StepsDone, r.StepsTotal)
			}
			skipped := countJournal(t, e, run, cairn.JournalStepSkipped, "")
			if want := map[string]int{"bug": 1, "feature": 2}[kind]; skipped != want {
				t.Fatalf("%d step_skipped entries, want %d", skipped, want)
			}
		})
	}
}

// A condition that is not a bool, or fails to evaluate, fails the step
// and the run with render_error naming the step; nothing is skipped
// silently.
func TestWhenThatCannotBeDecidedFailsTheRun(t *testing.T) {
	for name, cond := range map[string]string{
		"not a bool":  "input.n + 1",
		"no such key": "input.missing.deeper == 1",
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, wallClock(), withWorkflows("w", cairn.Workflow{Name: "c", Version: "1", Steps: []cairn.Step{{ID: "a", When: cond}, {ID: "b"}}}))
			e := h.e
			run := mustStart(t, e, "c", `{"n": 1}`)
			r := getRun(t, e, run)
			if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassRenderError || r.Error.Step != "a" {
				t.Fatalf("run %s %+v", r.Status, r.Error)
			}
			if !strings.Contains(r.Error.Message, "when condition of step a") {
				t.Fatalf("message %q", r.Error.Message)
			}
			if got := stepOf(r, "a").Status; got != cairn.StepFailed {
				t.Fatalf("a is %s", got)
			}
		})
	}
}

// A run whose every step is skipped completes at start, with a null
// output; a when on a root step sees the run's input.
func TestWhenAllSkippedCompletesAtStart(t *testing.T) {
	e := newTestEngine(t, nil, Config{})
	register(t, e, "w", cairn.Workflow{Name: "s", Version: "1", Steps: []cairn.Step{
		{ID: "a", When: "input.go"}, {ID: "b", After: []string{"a"}},
	}})
	r := getRun(t, e, mustStart(t, e, "s", `{"go": false}`))
	if r.Status != cairn.RunCompleted || string(r.Output) != "null" {
		t.Fatalf("run %s output %s", r.Status, r.Output)
	}
	r = getRun(t, e, mustStart(t, e, "s", `{"go": true}`))
	if r.Status != cairn.RunRunning || stepOf(r, "a").Status != cairn.StepReady {
		t.Fatalf("run %s, a %s", r.Status, stepOf(r, "a").Status)
	}
}

// A condition that does not compile is refused at registration, naming
// the step's field.
func TestWhenValidatedAtRegistration(t *testing.T) {
	e := newTestEngine(t, nil, Config{})
	_, err := e.Register(context.Background(), cairn.RegisterRequest{WorkerID: "w", Workflows: []cairn.Workflow{
		{Name: "bad", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "b", After: []string{"a"}, When: "steps.a.output ==="}}},
	}})
	var ve cairn.ValidationError
	if !errors.As(err, &ve) || len(ve) != 1 || ve[0].Field != "workflows[0].steps[1].when" {
		t.Fatalf("got %v", err)
	}
}
