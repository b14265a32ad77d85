package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/history"
	"github.com/cairn-dev/cairn/engine/internal/link"
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
	// visit is set in kinds.go's init (it reaches the committer).
	event: func(e *Engine, r *runRecord, _ *definition, s *cairn.Step, ev eventRecord, fx *effects) bool {
		st := r.Steps[s.ID]
		if w := st.Wait; w == nil || w.Event == "" || w.Event != ev.Name || st.Status != cairn.StepReady || w.Until != nil && !fx.now.Before(*w.Until) {
			return false // not waiting for it, or too late: the driver records the timeout
		}
		e.eventArrived(r, s.ID, ev, fx)
		return true
	},
}

// funcWait is what a suspended function step waits for: an event, or
// the end of a run it invoked (its id in stepState.Child).
type funcWait struct {
	Op     string            `json:"op"`               // the operation's id
	Event  string            `json:"event,omitempty"`  // the event's name
	Until  *time.Time        `json:"until,omitempty"`  // the wait's timeout
	Invoke *cairn.Invocation `json:"invoke,omitempty"` // the run to start
}

// Checkpoint adds a function step's operations to its history, and ends
// the attempt when it suspends. It is refused like a heartbeat once the
// attempt is not current — a fenced driver checkpoints nothing — and is
// one run-record write, shared with concurrent commits of the run.
func (e *Engine) Checkpoint(ctx context.Context, id string, req cairn.CheckpointRequest) (*cairn.Checkpointed, error) {
	tok, err := leaseArg(id)
	if err != nil {
		return nil, err
	}
	if err := req.Suspend.Check(e.cfg.MaxOutputBytes); err != nil {
		return nil, err
	}
	tok, l, _, err := e.workerCall(ctx, tok, nil)
	if err != nil {
		return nil, err
	}
	if err := e.payloads.ExternalizeOps(ctx, tok.Run, req.Operations, e.cfg.MaxOutputBytes); err != nil {
		return nil, err
	}
	d, err := e.definition(ctx, l.Workflow, l.Rev())
	if err != nil {
		return nil, err
	}
	if s := d.Step(l.Step); s == nil || s.EffectiveKind() != cairn.KindFunction {
		return nil, &InvalidError{Field: "lease", Message: "checkpoint applies to function steps only"}
	}
	// The refusal of a checkpoint whose history changed under it is the
	// mutation's value, not its error: its attempt ends, and that commits.
	type answer struct {
		out     *cairn.Checkpointed
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
		// The attempt runs: what it waited for before is not waited for now
		// (an event is kept for the wait that suspends again; an invoked
		// run's end is found again by its key).
		st.Wait = nil
		if sp := req.Suspend; sp != nil {
			if want := sp.Awaits(); sp.Op != "" && !history.Holds(st.Ops, sp.Op, want) {
				return answer{}, cairn.ValidationError{{Field: "body.suspend.op", Message: fmt.Sprintf("the history holds no %s operation %q", want, sp.Op)}}
			}
			e.suspendFor(r, d, l, sp, fx)
			addUsage(r, st, st.attempt(tok.Attempt), e.priced(req.Usage))
			e.checkBudget(r, tok.Step, fx.now)
		}
		return answer{out: &cairn.Checkpointed{Operations: len(st.Ops), RunStatus: r.Status}}, nil
	})
	if err == nil && (req.Suspend != nil || a.refusal != nil) {
		e.leases.Forget(tok.Run, tok.Step, tok.Attempt)
		e.releaseSlots(ctx, l) // the attempt is over (limits.go)
	}
	if err == nil && a.refusal != nil {
		return nil, a.refusal
	}
	return a.out, err
}

// continueAsNew completes a function's run by starting a new run of its
// workflow version with the input given (an empty history), once: the key
// continue:<run> names it, so a retry, or the next attempt's replay, gets
// the same run. The run completes with output {"continued_as": <id>}; a
// run that ended first cancels the one it would have continued as.
func (e *Engine) continueAsNew(ctx context.Context, id string, req cairn.CompleteRequest) (*cairn.Ended, error) {
	if len(req.Output) > 0 || req.ClaimNext != nil {
		return nil, cairn.ValidationError{{Field: "body.output", Message: "leave output and claim_next out with continue_as_new"}}
	}
	if err := e.checkPayload("body.continue_as_new.input", req.ContinueAsNew.Input); err != nil {
		return nil, err
	}
	if err := cairn.CheckSizes(nil, req.StatePatch, e.cfg.MaxOutputBytes); err != nil {
		return nil, err
	}
	tok, err := leaseArg(id)
	if err != nil {
		return nil, err
	}
	tok, l, _, err := e.workerCall(ctx, tok, nil)
	if err != nil {
		return nil, err
	}
	d, err := e.definition(ctx, l.Workflow, l.Rev())
	if err != nil {
		return nil, err
	}
	r, err := e.readRun(ctx, tok.Run)
	if err != nil {
		return nil, err
	}
	if s := d.Step(l.Step); s == nil || s.EffectiveKind() != cairn.KindFunction || r.Parent != nil {
		return nil, cairn.ValidationError{{Field: "body.continue_as_new", Message: "only a function's run that no parent started (a child step, an invoke) can continue as new"}}
	}
	next, err := e.startRun(ctx, cairn.StartRequest{Workflow: r.Workflow, Version: r.Version, Input: req.ContinueAsNew.Input,
		Correlation: r.Correlation, Priority: r.Priority, IdempotencyKey: "continue:" + r.ID, Attributes: r.Attrs.View()},
		func(nr *runRecord, _ *definition, _ time.Time) { nr.ContinuedFrom = r.ID })
	if err != nil {
		return nil, err
	}
	out := json.RawMessage(`{"continued_as":"` + next.Run.ID + `"}`)
	en := e.completing(&out, req.StatePatch, req.Usage, req.Summary)
	en.continued = next.Run.ID
	ended, err := e.end(ctx, tok, en)
	if reason, _ := IsRejection(err); reason == cairn.ReasonRunTerminal {
		_, _ = e.CancelRun(ctx, next.Run.ID, "the run it continued had ended")
	}
	return ended, err
}

// historyLimits bounds a function step's history, which the run record
// holds: a result at most one payload (a larger one than the record keeps
// inline is a payload of the run by then), all of them,
// as the record holds them, at most half the record's limit.
func (e *Engine) historyLimits() history.Limits {
	return history.Limits{Operations: cairn.MaxOperations, ResultBytes: e.cfg.MaxOutputBytes, Bytes: e.cfg.MaxRunRecordBytes / 2}
}

// suspendFor ends the attempt of lease l as sp says: until a time, or
// until an event (at once when the run already holds it, or when the
// wait's outcome is already recorded).
func (e *Engine) suspendFor(r *runRecord, d *definition, l *leaseRecord, sp *cairn.Suspension, fx *effects) {
	until := fx.now.Add(100 * 365 * 24 * time.Hour) // an event's wait without a timeout
	if sp.Until != nil {
		until = *sp.Until
	}
	e.suspend(r, d, l, until, fx)
	st := r.Steps[l.Step]
	switch {
	case sp.Op == "": // a sleep
	case history.Ended(st.Ops, sp.Op):
		e.readyNow(r, l.Step, fx)
	case sp.Invoke != nil:
		st.Wait, st.Child = &funcWait{Op: sp.Op, Invoke: sp.Invoke}, &childState{Attempt: l.Attempt}
		run, step := r.ID, l.Step
		e.inBackground(fx, run, step, "function: starting an invoked run failed; the reaper starts it",
			func(ctx context.Context) error { return e.startInvoked(ctx, run, step) })
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
	op := history.Outcome(st.Wait.Op, len(st.Ops), cairn.OpWait, ev.Payload, nil, fx.now)
	op.Update = ev.Update
	r.Updates.Took(ev.Update, step)
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

// functionWake is when the reaper must look at a function step that
// waits (ok false when it does not wait): for an event, at the wait's
// timeout, if any (the next attempt is claimable then); for a run it
// invoked, at once to start it, then routinely to read its end.
func functionWake(e *Engine, st *stepState, now time.Time) (t time.Time, ok bool) {
	switch w := st.Wait; {
	case w == nil:
		return time.Time{}, false
	case w.Invoke == nil && w.Until != nil:
		return *w.Until, true
	case w.Invoke == nil:
		return time.Time{}, true // only the event wakes it: no timer
	case st.Child == nil || st.Child.Run == "":
		return now, true
	}
	return now.Add(e.cfg.ActiveCheckInterval), true
}

// visitFunction is the function kind's visit: start the run it invoked
// if it has none yet, or apply its end.
func visitFunction(ctx context.Context, e *Engine, r *runRecord, _ *definition, s *cairn.Step) error {
	st := r.Steps[s.ID]
	if w := st.Wait; w == nil || w.Invoke == nil {
		return nil
	}
	if st.Child == nil || st.Child.Run == "" {
		return e.startInvoked(ctx, r.ID, s.ID)
	}
	c, err := e.readRun(ctx, st.Child.Run)
	if err != nil || !c.Status.Terminal() {
		return err
	}
	return e.childEnded(ctx, c)
}

// startInvoked starts the run a function step invoked (idempotently: the
// key names the operation) and records its id.
func (e *Engine) startInvoked(ctx context.Context, run, step string) error {
	r, err := e.readRun(ctx, run)
	if err != nil {
		return err
	}
	st := r.Steps[step]
	if r.Status.Terminal() || st == nil || st.Wait == nil || st.Wait.Invoke == nil || st.Child == nil || st.Child.Run != "" {
		return nil
	}
	w := *st.Wait
	return e.startLinked(ctx, cairn.StartRequest{Workflow: w.Invoke.Workflow, Version: w.Invoke.Version, Input: w.Invoke.Input,
		Correlation: r.Correlation, IdempotencyKey: link.InvokeKey(run, step, w.Op)}, linkUnder(r, step, w.Op),
		func(err error) error { // the operation fails with the reason
			why := cairn.ErrorInfo{Class: cairn.ClassFatal, Message: fmt.Sprintf("the run of workflow %s could not start: %v", w.Invoke.Workflow, err)}
			return e.invokeDone(ctx, run, step, w.Op, "", nil, &why)
		},
		func(st *stepState) bool { return st.Wait != nil && st.Wait.Op == w.Op }, " for "+w.Op)
}

// invokeDone records the end of the run a function step invoked for op
// (its output, or why) as the operation's outcome, and makes the step's
// next attempt claimable now: only while the step still waits for it.
func (e *Engine) invokeDone(ctx context.Context, run, step, op, child string, output json.RawMessage, why *cairn.ErrorInfo) error {
	_, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (struct{}, error) {
		st := r.Steps[step]
		if r.Status.Terminal() || st == nil || st.Wait == nil || st.Wait.Op != op || st.Wait.Invoke == nil {
			return struct{}{}, nil
		}
		o := history.Outcome(op, len(st.Ops), cairn.OpInvoke, output, why, fx.now)
		st.Ops, st.Wait = append(st.Ops, o), nil
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalOperation, Step: step, Error: why, Message: "invoke " + op + " " + string(o.Status) + " (child run " + child + ")"})
		e.readyNow(r, step, fx)
		return struct{}{}, nil
	})
	return err
}
