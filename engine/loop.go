package engine

import (
	"fmt"

	"github.com/cairn-dev/cairn"
)

// loopBack sends the run back over a loop's body when the step that just
// completed has a next route whose if holds (docs/DECISIONS.md, "Loops"),
// or fails the run: render_error, or loop_limit past max_visits.
func (e *Engine) loopBack(r *runRecord, d *definition, step string, fx *effects) {
	s, st := d.Step(step), r.Steps[step]
	vars := e.renderVarsFor(r, d, step)
	vars.Steps[step], vars.Visits[step] = st.Output, st.visits()
	for j, c := range d.nexts[step] {
		back, err := c.Bool(vars)
		if err != nil {
			why := cairn.ErrorInfo{Class: cairn.ClassRenderError, Message: fmt.Sprintf("next[%d].if of step %s: %v", j, step, err)}
			e.failStepAndRun(r, step, why, cairn.JournalEntry{}, fx)
			return
		}
		if !back {
			continue
		}
		to, n := s.Next[j].To, st.visits()
		if n >= s.EffectiveMaxVisits() {
			why := cairn.ErrorInfo{Class: cairn.ClassLoopLimit, Message: fmt.Sprintf("step %s routed back to %s after its visit %d: its max_visits is %d", step, to, n, s.EffectiveMaxVisits())}
			e.failStepAndRun(r, step, why, cairn.JournalEntry{}, fx)
			return
		}
		for _, id := range d.LoopBody(step, to) {
			b := r.Steps[id]
			*b = stepState{Status: cairn.StepPending, Attempt: b.Attempt, Attempts: b.Attempts, Usage: b.Usage, Loops: b.Loops + 1, Lease: b.Lease}
		}
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepLooped, Step: step, Message: fmt.Sprintf("back to %s: visit %d of %s", to, n+1, step)})
		return
	}
}
