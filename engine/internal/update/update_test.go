package update

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// run is a run of a task t, a wait w for "go" answered by task b, and a
// function f, with the steps' states given.
func run(status cairn.RunStatus, states map[string]Step) Run {
	steps := []cairn.Step{
		{ID: "t"},
		{ID: "w", Kind: cairn.KindWait, Event: "go", Answer: "b", After: []string{"t"}},
		{ID: "b", After: []string{"w"}},
		{ID: "f", Kind: cairn.KindFunction},
	}
	return Run{ID: "R", Status: status, Steps: steps, State: func(id string) Step {
		st := states[id]
		for i := range steps {
			if steps[i].ID == id {
				st.Def = &steps[i]
			}
		}
		return st
	}}
}

func TestView(t *testing.T) {
	rec := Record{ID: "u", Name: "go", Step: "w"}
	for _, c := range []struct {
		name   string
		run    Run
		rec    Record
		status cairn.UpdateStatus
		answer string
	}{
		{"taken, answer step pending", run(cairn.RunRunning, map[string]Step{"w": {Status: cairn.StepCompleted}}), rec, cairn.UpdateAccepted, ""},
		{"answer step completed", run(cairn.RunRunning, map[string]Step{"b": {Status: cairn.StepCompleted, Output: json.RawMessage(`1`)}}), rec, cairn.UpdateAnswered, "1"},
		{"answer step skipped", run(cairn.RunRunning, map[string]Step{"b": {Status: cairn.StepSkipped}}), rec, cairn.UpdateFailed, ""},
		{"run ended first", run(cairn.RunCancelled, nil), rec, cairn.UpdateFailed, ""},
		{"kept, a wait is left", run(cairn.RunRunning, map[string]Step{"w": {Status: cairn.StepPending}, "f": {Status: cairn.StepCompleted}}), Record{ID: "u", Name: "go"}, cairn.UpdateAccepted, ""},
		{"kept, no wait left", run(cairn.RunRunning, map[string]Step{"w": {Status: cairn.StepSkipped}, "f": {Status: cairn.StepCompleted}}), Record{ID: "u", Name: "go"}, cairn.UpdateFailed, ""},
		{"a function replied", run(cairn.RunRunning, map[string]Step{"f": {Status: cairn.StepReady, Ops: []cairn.Operation{
			{Kind: cairn.OpReply, Status: cairn.OpCompleted, Update: "other", Result: json.RawMessage(`0`)},
			{Kind: cairn.OpReply, Status: cairn.OpCompleted, Update: "u", Result: json.RawMessage(`"yes"`)},
		}}}), Record{ID: "u", Name: "ask", Step: "f"}, cairn.UpdateAnswered, `"yes"`},
		{"a function ended without replying", run(cairn.RunRunning, map[string]Step{"f": {Status: cairn.StepCompleted}}), Record{ID: "u", Name: "ask", Step: "f"}, cairn.UpdateFailed, ""},
	} {
		u := c.run.View(c.rec)
		if u.Status != c.status || string(u.Answer) != c.answer || (u.Status == cairn.UpdateFailed) != (u.Error != nil) {
			t.Errorf("%s: %s %s %+v, want %s %s", c.name, u.Status, u.Answer, u.Error, c.status, c.answer)
		}
	}
}

func TestAcceptsAndAgain(t *testing.T) {
	r := run(cairn.RunRunning, map[string]Step{"w": {Status: cairn.StepCompleted}, "f": {Status: cairn.StepCompleted}})
	var ve cairn.ValidationError
	if err := r.Accepts("go", 0); !errors.As(err, &ve) || ve[0].Field != "name" {
		t.Fatalf("a taken wait: %v", err)
	}
	if err := run(cairn.RunRunning, nil).Accepts("anything", 0); err != nil {
		t.Fatalf("a function takes any name: %v", err)
	}
	var ce *errs.ConflictError
	if err := run(cairn.RunRunning, nil).Accepts("go", Max); !errors.As(err, &ce) {
		t.Fatalf("over the bound: %v", err)
	}
	rec := Record{ID: "u", Name: "go", Sum: Sum("go", json.RawMessage(`{"a": 1}`))}
	if err := rec.Again("go", Sum("go", json.RawMessage(`{"a":1}`))); err != nil {
		t.Fatalf("the same input, spaced otherwise: %v", err)
	}
	if err := rec.Again("go", Sum("go", json.RawMessage(`{"a":2}`))); !errors.As(err, &ce) {
		t.Fatalf("another input: %v", err)
	}
	log := Log{{ID: "u"}}
	log.Took("", "w")
	log.Took("u", "w")
	log.Took("u", "x")
	if log[0].Step != "w" {
		t.Fatalf("took: %+v", log)
	}
}
