package cairn

import (
	"strings"
	"testing"
)

// TestLoopValidation: each wrong loop is refused naming its field.
func TestLoopValidation(t *testing.T) {
	base := func(mod func(w *Workflow)) *Workflow {
		w := &Workflow{Name: "l", Version: "1", Steps: []Step{
			{ID: "a"}, {ID: "b", After: []string{"a"}},
			{ID: "c", After: []string{"b"}, Next: []Route{{To: "a", If: "true"}}},
		}}
		mod(w)
		return w
	}
	for _, tc := range []struct {
		name, field, msg string
		mod              func(w *Workflow)
	}{
		{"to a later step", "w.steps[0].next[0].to", "not a step a runs after", func(w *Workflow) {
			w.Steps[0].Next = []Route{{To: "c", If: "true"}}
		}},
		{"to itself", "w.steps[2].next[0].to", "not a step c runs after", func(w *Workflow) { w.Steps[2].Next[0].To = "c" }},
		{"no if", "w.steps[2].next[0].if", "required", func(w *Workflow) { w.Steps[2].Next[0].If = "" }},
		{"max_visits alone", "w.steps[1].max_visits", "set next too", func(w *Workflow) { w.Steps[1].MaxVisits = 3 }},
		{"max_visits too large", "w.steps[2].max_visits", "between 1 and 1000", func(w *Workflow) { w.Steps[2].MaxVisits = 1001 }},
		{"a wait loops", "w.steps[2].next", "task and function steps only", func(w *Workflow) {
			w.Steps[2].Kind, w.Steps[2].Event = KindWait, "go"
		}},
		{"a way out of the body", "w.steps[3].after", "only c may lead out of its loop", func(w *Workflow) {
			w.Steps = append(w.Steps, Step{ID: "d", After: []string{"b"}})
		}},
		{"a map in the body", "w.steps[2].next[0].to", "map step b", func(w *Workflow) {
			w.Steps[1].Kind, w.Steps[1].Items = KindMap, "[1]"
		}},
		{"two loops share a step", "w.steps[3].next[0].to", "in the loop of step c too", func(w *Workflow) {
			w.Steps = append(w.Steps, Step{ID: "d", After: []string{"c"}, Next: []Route{{To: "b", If: "true"}}})
		}},
		{"on_failure", "w.on_failure[0].next", "do not loop", func(w *Workflow) {
			w.OnFailure = []Step{{ID: "undo", Next: []Route{{To: "a", If: "true"}}}}
		}},
	} {
		err := base(tc.mod).Validate("w")
		var found bool
		if ve, ok := err.(ValidationError); ok {
			for _, fe := range ve {
				found = found || fe.Field == tc.field && strings.Contains(fe.Message, tc.msg)
			}
		}
		if !found {
			t.Errorf("%s: %v; want %s: …%s…", tc.name, err, tc.field, tc.msg)
		}
	}
	if err := base(func(*Workflow) {}).Validate("w"); err != nil {
		t.Fatalf("a good loop: %v", err)
	}
}
