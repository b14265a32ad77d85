package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/history"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// RerunRun starts a new run of an ended run's workflow version with its
// input, correlation and final state, in which every step that completed
// in the old run (except from_step and the steps after it) is already
// completed with its old output (journal: step_completed, "reused from
// run …"), and the rest run again. The new run records the old one as
// rerun_of; the old run is not changed. Like Temporal's reset and
// Inngest's replay, it is a new run, not a rewind: the old run's history
// stays as it was.
func (e *Engine) RerunRun(ctx context.Context, id string, req cairn.RerunRequest) (*cairn.StartResult, error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, err
	}
	if req.FromStep != "" {
		if err := keys.StepID.Check("from_step", req.FromStep); err != nil {
			return nil, err
		}
	}
	old, err := e.readRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if !old.Status.Terminal() {
		return nil, &ConflictError{Message: fmt.Sprintf("run %s is still running; cancel it before rerunning it", id)}
	}
	d, err := e.definition(ctx, old.Workflow, old.Version)
	if err != nil {
		return nil, err
	}
	rerun := map[string]bool{}
	if req.FromStep != "" {
		if d.Step(req.FromStep) == nil {
			return nil, cairn.ValidationError{{Field: "from_step", Message: fmt.Sprintf("workflow %s@%s has no step %q", old.Workflow, old.Version, req.FromStep)}}
		}
		rerun[req.FromStep] = true
		for _, s := range d.Steps {
			for _, a := range d.ancestors[s.ID] {
				if a == req.FromStep {
					rerun[s.ID] = true
				}
			}
		}
	}
	// The old run's payloads are its own (deleted with it): the new run
	// stores its own copies (payloads.go).
	if err := e.resolveRecord(ctx, old, rerun); err != nil {
		return nil, err
	}
	start := cairn.StartRequest{Workflow: old.Workflow, Version: old.Version, Input: old.Input, Correlation: old.Correlation,
		IdempotencyKey: req.IdempotencyKey, State: old.State, Attributes: old.Attrs.View()}
	return e.startRun(ctx, start, func(r *runRecord, d *definition, now time.Time) {
		r.RerunOf = old.ID
		for _, s := range d.Steps {
			was := old.Steps[s.ID]
			if was != nil && was.Status != cairn.StepCompleted && !rerun[s.ID] && len(was.Ops) > 0 {
				// A function goes on from its last checkpoint before what
				// failed (function.go).
				r.Steps[s.ID].Ops = history.Resumable(was.Ops)
				r.journal(now, cairn.JournalEntry{Type: cairn.JournalOperation, Step: s.ID,
					Message: fmt.Sprintf("%d operations reused from run %s", len(r.Steps[s.ID].Ops), old.ID)})
			}
			if was == nil || was.Status != cairn.StepCompleted || rerun[s.ID] {
				continue
			}
			st := r.Steps[s.ID]
			st.Status, st.Output = cairn.StepCompleted, was.Output
			r.journal(now, cairn.JournalEntry{Type: cairn.JournalStepCompleted, Step: s.ID, Message: "reused from run " + old.ID})
		}
	})
}
