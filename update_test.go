package cairn

import (
	"strings"
	"testing"
)

// A wait's answer names a step that comes after it; only waits take one.
func TestWaitAnswerValidation(t *testing.T) {
	wf := func(answer string, kind StepKind) Workflow {
		return Workflow{Name: "a", Version: "1", Steps: []Step{
			{ID: "t"},
			{ID: "w", Kind: kind, Event: "go", Answer: answer, After: []string{"t"}},
			{ID: "b", After: []string{"w"}},
			{ID: "c", After: []string{"b"}},
		}}
	}
	for _, answer := range []string{"", "w", "b", "c"} {
		w := wf(answer, KindWait)
		if err := w.Validate("workflow"); err != nil {
			t.Errorf("answer %q: %v", answer, err)
		}
	}
	for _, answer := range []string{"t", "nope"} {
		w := wf(answer, KindWait)
		if err := w.Validate("workflow"); err == nil || !strings.Contains(err.Error(), "workflow.steps[1].answer") {
			t.Errorf("answer %q: %v, want refused", answer, err)
		}
	}
	w := Workflow{Name: "a", Version: "1", Steps: []Step{{ID: "t", Answer: "t"}}}
	if err := w.Validate("workflow"); err == nil || !strings.Contains(err.Error(), "answer applies to wait steps only") {
		t.Errorf("a task's answer: %v", err)
	}
}
