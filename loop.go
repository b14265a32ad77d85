package cairn

import (
	"fmt"
	"slices"
)

// Loops (docs/API.md, "Loops"): a task or function step may route back to
// a step it runs after, while a condition holds, at most max_visits times.

// Route is one arm of a step's next: when the step completes, the first
// arm whose condition holds sends the run back to step To.
type Route struct {
	To string `json:"to" minLength:"1" maxLength:"64" doc:"A step this one runs after (directly or not): it and every step between it and this one run again (a new visit)."`
	If string `json:"if" minLength:"1" maxLength:"2000" doc:"A CEL condition (bare, or as ${expr}) over input, state, run and steps.<id>.output and .visits, this step's own included, evaluated when the step completes."`
}

// DefaultMaxVisits is a looping step's max_visits when it sets none;
// MaxMaxVisits the most it may set.
const (
	DefaultMaxVisits = 10
	MaxMaxVisits     = 1000
)

// ClassLoopLimit: a step's next routed back past its max_visits. The run
// fails with it; not retried.
const ClassLoopLimit = "loop_limit"

// EffectiveMaxVisits is how many visits a looping step may make.
func (s *Step) EffectiveMaxVisits() int {
	if s.MaxVisits == 0 {
		return DefaultMaxVisits
	}
	return s.MaxVisits
}

// LoopBody is what a loop from step from back to step to runs again: to,
// from, and every step between them (after to and before from), in the
// definition's order.
func (w *Workflow) LoopBody(from, to string) []string {
	var body []string
	for _, s := range w.Steps {
		if s.ID == to || s.ID == from || slices.Contains(w.Ancestors(s.ID), to) && slices.Contains(w.Ancestors(from), s.ID) {
			body = append(body, s.ID)
		}
	}
	return body
}

// validateLoops checks each step's next and max_visits: a route goes back
// to a step the step runs after, with a condition; a loop's body holds no
// map or child step, no step of it but the looping one has a successor
// outside it, and no step is in two loops.
func (w *Workflow) validateLoops(index map[string]int, add func(field, format string, args ...any)) {
	inLoop := map[string]string{}
	for i, s := range w.Steps {
		f := fmt.Sprintf(".steps[%d]", i)
		if s.MaxVisits < 0 || s.MaxVisits > MaxMaxVisits {
			add(f+".max_visits", "must be between 1 and %d (0: %d)", MaxMaxVisits, DefaultMaxVisits)
		}
		if s.MaxVisits != 0 && len(s.Next) == 0 {
			add(f+".max_visits", "bounds a loop: set next too")
		}
		for j, r := range s.Next {
			rf := fmt.Sprintf("%s.next[%d]", f, j)
			if r.If == "" {
				add(rf+".if", "required: a loop goes back while its condition holds")
			}
			if _, ok := index[r.To]; !ok || !slices.Contains(w.Ancestors(s.ID), r.To) {
				add(rf+".to", "%q is not a step %s runs after: a route goes back to an earlier step", r.To, s.ID)
				continue
			}
			body := w.LoopBody(s.ID, r.To)
			for _, id := range body {
				b := w.Steps[index[id]]
				if k := b.EffectiveKind(); k == KindMap || k == KindChild {
					add(rf+".to", "the loop's body holds %s step %s: a loop runs task, function, wait and sleep steps", k, id)
				}
				if other, ok := inLoop[id]; ok && other != s.ID {
					add(rf+".to", "step %s is in the loop of step %s too: loops may not share steps", id, other)
				}
				inLoop[id] = s.ID
			}
			for k, o := range w.Steps {
				for _, a := range o.After {
					if a != s.ID && slices.Contains(body, a) && !slices.Contains(body, o.ID) {
						add(fmt.Sprintf(".steps[%d].after", k), "step %s runs after %s, inside the loop of step %s: only %s may lead out of its loop", o.ID, a, s.ID, s.ID)
					}
				}
			}
		}
	}
}
