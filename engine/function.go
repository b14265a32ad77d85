package engine

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/history"
	"github.com/cairn-dev/cairn/notify"
)

// A function step (cairn.KindFunction) is a task attempt whose worker
// replays a body: what the body did is checkpointed in the step's history
// (stepState.Ops) under the attempt's lease, and a suspension ends the
// attempt and schedules the next one — at a sleep's end, or when the
// event a wait suspended for arrives — which replays the body from the
// history its lease carries (docs/FUNCTIONS.md).
var functionKind = &stepKind{
	active: cairn.StepReady, // claimed, held, retried and recovered as a task
	start:  taskKind.start,
	wake:   taskKind.wake,
	event: func(e *Engine, r *runRecord, s *cairn.Step, ev eventRecord, fx *effects) bool {
		st := r.Steps[s.ID]
		if w := st.Wait; w == nil || w.Event != ev.Name || st.Status != cairn.StepReady || w.Until != nil && !fx.now.Before(*w.Until) {
			return false // not waiting for it, or too late: the driver records the timeout
		}
		e.eventArrived(r, s.ID, ev, fx)
		return true
	},
}

// funcWait is the event a suspended function step waits for.
type funcWait struct {
	Op    string     `json:"op"`              // the wait operation's id
	Event string     `json:"event"`           // the event's name
	Until *time.Time `json:"until,omitempty"` // the wait's timeout
}

// CheckpointRequest records a function step's operations.
type CheckpointRequest struct {
	Operations []cairn.Operation `json:"operations" nullable:"false" maxItems:"1000" doc:"Operations to add to the step's history, in order: each one's seq continues the history (an operation already recorded at its seq is skipped, so a checkpoint sent again adds nothing)."`
	Suspend    *Suspension       `json:"suspend,omitempty" doc:"End this attempt once the operations are recorded: the step's next attempt, which replays the history, becomes claimable at until, or when event arrives (the engine then records it as op's outcome), whichever is first."`
}

// Suspension is when a suspended function goes on.
type Suspension struct {
	Until *time.Time `json:"until,omitempty" doc:"When the next attempt becomes claimable (a sleep's end, a wait's timeout; a time past is now). Required without event."`
	Event string     `json:"event,omitempty" maxLength:"256" doc:"An event sent to the run that makes the next attempt claimable at once, recorded as op's outcome (its payload the result)."`
	Op    string     `json:"op,omitempty" maxLength:"512" doc:"With event: the id of the wait operation the event completes."`
}

// Checkpointed answers a checkpoint.
type Checkpointed struct {
	Operations int             `json:"operations" doc:"The history's length now."`
	RunStatus  cairn.RunStatus `json:"run_status"`
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
	if sp := req.Suspend; sp != nil && (sp.Until == nil && sp.Event == "" || (sp.Event == "") != (sp.Op == "")) {
		return nil, cairn.ValidationError{{Field: "body.suspend", Message: "needs until, or event and op (a wait, with until as its timeout)"}}
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
	// The refusal of a checkpoint whose history changed under it is the
	// mutation's value, not its error: its attempt ends, and that commits.
	type answer struct {
		out     *Checkpointed
		refusal error
	}
	a, err := mutate(ctx, e.commits, tok.Run, func(r *runRecord, fx *effects) (answer, error) {
		if err := e.checkCurrent(r, tok); err != nil {
			return answer{}, err
		}
		st := r.Steps[tok.Step]
		added, err := history.Append(st.Ops, req.Operations, fx.now, e.historyLimits())
		var fe *history.FieldError
		switch {
		case errors.Is(err, history.ErrChanged):
			// An event completed a wait this replay did not see: the next
			// attempt replays it.
			e.suspend(r, d, l, fx.now, fx)
			return answer{refusal: reject(cairn.ReasonFenced, "the history changed under attempt %d (%v): the next attempt replays it", tok.Attempt, err)}, nil
		case errors.As(err, &fe):
			return answer{}, cairn.ValidationError{{Field: "body." + fe.Field, Message: fe.Message}}
		}
		for _, op := range added {
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalOperation, Step: tok.Step, Attempt: tok.Attempt, Error: op.Error,
				Message: string(op.Kind) + " " + op.ID + " " + string(op.Status)})
		}
		st.Ops = append(st.Ops, added...)
		if sp := req.Suspend; sp != nil {
			e.suspendFor(r, d, l, sp, fx)
		}
		return answer{out: &Checkpointed{Operations: len(st.Ops), RunStatus: r.Status}}, nil
	})
	if err == nil && (req.Suspend != nil || a.refusal != nil) {
		e.forgetLease(tok.Run, tok.Step, tok.Attempt)
		e.releaseSlots(ctx, l) // the attempt is over (limits.go)
	}
	if err == nil && a.refusal != nil {
		return nil, a.refusal
	}
	return a.out, err
}

// historyLimits bounds a function step's history.
func (e *Engine) historyLimits() history.Limits {
	return history.Limits{Operations: cairn.MaxOperations, ResultBytes: e.cfg.MaxOutputBytes, Bytes: 4 * e.cfg.MaxOutputBytes}
}

// suspendFor ends the attempt of lease l as sp says: until a time, or
// until an event (at once when the run already holds it, or when the
// wait's outcome is already recorded).
func (e *Engine) suspendFor(r *runRecord, d *definition, l *leaseRecord, sp *Suspension, fx *effects) {
	until := fx.now.Add(100 * 365 * 24 * time.Hour) // an event's wait without a timeout
	if sp.Until != nil {
		until = *sp.Until
	}
	e.suspend(r, d, l, until, fx)
	st := r.Steps[l.Step]
	switch {
	case sp.Event == "":
	case history.Ended(st.Ops, sp.Op):
		e.readyNow(r, l.Step, fx)
	default:
		st.Wait = &funcWait{Op: sp.Op, Event: sp.Event, Until: sp.Until}
		if i := eventIndex(r.Events, sp.Event); i >= 0 && fx.now.Before(until) {
			ev := r.Events[i]
			r.Events = append(r.Events[:i:i], r.Events[i+1:]...)
			e.eventArrived(r, l.Step, ev, fx)
		}
	}
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
	st.Wait = nil
	e.scheduleAttempt(r, d, l.Step, until, fx)
}

// eventArrived records ev as the outcome of the wait step is suspended
// for, and makes its next attempt claimable now.
func (e *Engine) eventArrived(r *runRecord, step string, ev eventRecord, fx *effects) {
	st := r.Steps[step]
	op := cairn.Operation{ID: st.Wait.Op, Seq: len(st.Ops), Kind: cairn.OpWait, Status: cairn.OpCompleted, Result: ev.Payload, At: fx.now}
	if len(op.Result) == 0 {
		op.Result = []byte("null")
	}
	st.Ops, st.Wait = append(st.Ops, op), nil
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalOperation, Step: step, Message: "wait " + op.ID + " completed: event " + ev.Name + " received", Data: ev.Payload})
	e.readyNow(r, step, fx)
}

// readyNow makes a function step's scheduled attempt claimable now.
func (e *Engine) readyNow(r *runRecord, step string, fx *effects) {
	st := r.Steps[step]
	now := fx.now
	st.ReadyAt = &now
	fx.hints = append(fx.hints, notify.Hint{Run: r.ID, Workflow: r.Workflow, Version: r.Version, Step: step, Attempt: st.Attempt})
}
