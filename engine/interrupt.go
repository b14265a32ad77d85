package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Interrupt ends an attempt by interrupting its step (docs/DECISIONS.md,
// "Interrupting a step"), proven and applied as a complete is: the step
// waits with the payload, offering no attempt, until ResumeStep.
func (e *Engine) Interrupt(ctx context.Context, id string, req cairn.InterruptRequest) (*cairn.Ended, error) {
	tok, err := leaseArg(id)
	if err == nil {
		err = errors.Join(req.Check(), cairn.CheckSizes(nil, req.StatePatch, e.cfg.MaxOutputBytes))
	}
	if err != nil {
		return nil, err
	}
	if _, _, item := keys.SplitItem(tok.Step); item {
		return nil, cairn.ValidationError{{Field: "lease", Message: "an item of a map step cannot interrupt: interrupt in a step of its own"}}
	}
	en := e.completing(nil, req.StatePatch, req.Usage, req.Summary)
	en.interrupt = &req.Payload
	return e.end(ctx, tok, en)
}

// interrupted applies an interrupt: the step waits with payload.
func interrupted(r *runRecord, tok leaseToken, payload json.RawMessage, fx *effects) {
	st := r.Steps[tok.Step]
	st.Status, st.Interrupt, st.Resume, st.ReadyAt = cairn.StepInterrupted, payload, nil, nil
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepInterrupted, Step: tok.Step, Attempt: tok.Attempt, Worker: tok.Worker, Data: payload})
}

// ResumeStep resumes an interrupted step with value (by names who did,
// for the journal): its next attempt is claimable at once (at the run's
// resume when it is paused). Resuming again with the same value a step
// already resumed with writes nothing; any other resume of a step that
// is not interrupted, or of an ended run, is a ConflictError.
func (e *Engine) ResumeStep(ctx context.Context, run, step string, value json.RawMessage, by string) (*cairn.Run, error) {
	if err := keys.RunID.Check("run", run); err != nil {
		return nil, err
	}
	if err := cairn.CheckInterrupt("value", &value); err != nil {
		return nil, err
	}
	var d *definition
	r, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (*runRecord, error) {
		st := r.Steps[step]
		switch {
		case st == nil:
			return nil, &NotFoundError{What: "step", ID: step}
		case r.Status.Terminal():
			return nil, &ConflictError{Message: fmt.Sprintf("run %s already ended: %s", run, r.Status)}
		case st.Status != cairn.StepInterrupted && st.Resume != nil && bytes.Equal(st.Resume, value):
			return r, nil // resumed with this value already: nothing to write
		case st.Status != cairn.StepInterrupted:
			return nil, &ConflictError{Message: fmt.Sprintf("step %s is not interrupted: %s", step, st.Status)}
		}
		var err error
		if d, err = e.definition(ctx, r.Workflow, r.rev()); err != nil {
			return nil, err
		}
		st.Resume = value
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepResumed, Step: step, Message: "resumed by " + by, Data: value})
		e.scheduleAttempt(r, d, step, fx.now, fx)
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	if d == nil {
		d, _ = e.definition(ctx, r.Workflow, r.rev())
	}
	return e.view(r, d), nil
}
