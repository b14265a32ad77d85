package engine

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/history"
)

// A function step (cairn.KindFunction) is a task attempt whose worker
// replays a body: what the body did is checkpointed in the step's history
// (stepState.Ops) under the attempt's lease, and a suspension ends the
// attempt and schedules the next one at its due time, which replays the
// body from the history the lease carries (docs/FUNCTIONS.md).

// CheckpointRequest records a function step's operations.
type CheckpointRequest struct {
	Operations []cairn.Operation `json:"operations" nullable:"false" maxItems:"1000" doc:"Operations to add to the step's history, in order: each one's seq continues the history (an operation already recorded at its seq is skipped, so a checkpoint sent again adds nothing)."`
	Suspend    *Suspension       `json:"suspend,omitempty" doc:"End this attempt once the operations are recorded: the step's next attempt, which replays the history, becomes claimable at until."`
}

// Suspension is when a suspended function goes on.
type Suspension struct {
	Until time.Time `json:"until" doc:"When the next attempt becomes claimable (a sleep's end; a time past is now)."`
}

// Checkpointed answers a checkpoint.
type Checkpointed struct {
	Operations int             `json:"operations" doc:"The history's length now."`
	RunStatus  cairn.RunStatus `json:"run_status"`
}

// historyLimits bounds a function step's history.
func (e *Engine) historyLimits() history.Limits {
	return history.Limits{Operations: cairn.MaxOperations, ResultBytes: e.cfg.MaxOutputBytes, Bytes: 4 * e.cfg.MaxOutputBytes}
}

// Checkpoint adds a function step's operations to its history, and ends
// the attempt when it suspends. It is refused like a heartbeat once the
// attempt is not current — a fenced driver checkpoints nothing — and is
// one run-record write, shared with concurrent commits of the run.
func (e *Engine) Checkpoint(ctx context.Context, id string, req CheckpointRequest) (*Checkpointed, error) {
	tok, err := leaseArg(id)
	if err != nil {
		return nil, err
	}
	tok, l, _, err := e.workerCall(ctx, tok, nil)
	if err != nil {
		return nil, err
	}
	d, err := e.definition(ctx, l.Workflow, l.Version)
	if err != nil {
		return nil, err
	}
	if s := d.Step(l.Step); s == nil || s.EffectiveKind() != cairn.KindFunction {
		return nil, &InvalidError{Field: "lease", Message: "checkpoint applies to function steps only"}
	}
	out, err := mutate(ctx, e.commits, tok.Run, func(r *runRecord, fx *effects) (*Checkpointed, error) {
		if err := e.checkCurrent(r, tok); err != nil {
			return nil, err
		}
		st := r.Steps[tok.Step]
		added, err := history.Append(st.Ops, req.Operations, fx.now, e.historyLimits())
		var fe *history.FieldError
		if errors.As(err, &fe) {
			return nil, cairn.ValidationError{{Field: "body." + fe.Field, Message: fe.Message}}
		}
		for _, op := range added {
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalOperation, Step: tok.Step, Attempt: tok.Attempt, Error: op.Error,
				Message: string(op.Kind) + " " + op.ID + " " + string(op.Status)})
		}
		st.Ops = append(st.Ops, added...)
		if req.Suspend != nil {
			e.suspend(r, d, l, req.Suspend.Until, fx)
		}
		return &Checkpointed{Operations: len(st.Ops), RunStatus: r.Status}, nil
	})
	if err == nil && req.Suspend != nil {
		e.forgetLease(tok.Run, tok.Step, tok.Attempt)
		e.releaseSlots(ctx, l) // the attempt is over (limits.go)
	}
	return out, err
}

// suspend ends the attempt of lease l as suspended and schedules the
// step's next attempt at until: no retry budget or delivery is spent.
func (e *Engine) suspend(r *runRecord, d *definition, l *leaseRecord, until time.Time, fx *effects) {
	st := r.Steps[l.Step]
	claimed, ended := l.ClaimedAt, fx.now
	a := st.attempt(l.Attempt)
	a.Worker, a.ClaimedAt, a.StartedAt, a.EndedAt, a.Outcome = l.Worker, &claimed, l.StartedAt, &ended, cairn.OutcomeSuspended
	r.journal(claimed, cairn.JournalEntry{Type: cairn.JournalStepClaimed, Step: l.Step, Attempt: l.Attempt, Worker: l.Worker})
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepSuspended, Step: l.Step, Attempt: l.Attempt, Worker: l.Worker,
		Message: "until " + until.UTC().Format(time.RFC3339Nano)})
	e.scheduleAttempt(r, d, l.Step, until, fx)
}
