package engine

import (
	"cmp"
	"context"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/payload"
	"github.com/cairn-dev/cairn/engine/internal/update"
)

// SendUpdate delivers an update to a run, once per id, as an event of its
// name that a wait (or a function) must be left to take, and holds up to
// req.WaitMs for its answer (engine/internal/update).
func (e *Engine) SendUpdate(ctx context.Context, run string, req cairn.UpdateRequest) (*cairn.Update, error) {
	if err := update.Check(&req, e.cfg.MaxOutputBytes, func() string { return newRunID(e.now()) }); err != nil {
		return nil, err
	}
	sum := update.Sum(req.Name, req.Input)
	d, err := e.eventTarget(ctx, run, &req.Input)
	if err != nil {
		return nil, err
	}
	u, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (*cairn.Update, error) {
		if u := r.Updates.Find(req.ID); u != nil { // sent again: the same update
			return e.updateRun(r, d).View(*u), u.Again(req.Name, sum)
		}
		if err := e.takesEvents(r, fx.now); err != nil {
			return nil, err
		}
		if err := e.updateRun(r, d).Accepts(req.Name, len(r.Updates)); err != nil {
			return nil, err
		}
		r.Updates = append(r.Updates, update.Record{ID: req.ID, Name: req.Name, Sum: sum, At: fx.now})
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalEventReceived, Message: req.ID, Data: object.JSON(map[string]any{"name": req.Name, "payload": req.Input, "update": true})})
		_, _, err := e.deliver(r, d, eventRecord{Name: req.Name, Payload: req.Input, ReceivedAt: fx.now, ID: req.ID, Update: req.ID}, fx)
		return e.updateRun(r, d).View(r.Updates[len(r.Updates)-1]), err
	})
	if err != nil {
		return u, err
	}
	if u.Done() || req.WaitMs == 0 {
		return u, e.resolveAnswer(ctx, run, u)
	}
	return e.AwaitUpdate(ctx, run, req.ID, time.Duration(req.WaitMs)*time.Millisecond)
}

// resolveAnswer resolves u's answer when the answering step's output is
// stored by reference, up to ViewResolveBytes (a larger one stays a
// reference, which clients fetch from the run's payloads), as a run's
// view resolves its values (resolveView).
func (e *Engine) resolveAnswer(ctx context.Context, run string, u *cairn.Update) error {
	return e.payloads.ResolveWithin(ctx, run, &u.Answer, payload.NewBudget(e.cfg.ViewResolveBytes))
}

// AwaitUpdate returns update id of run, held up to wait (capped at the
// claim hold) until it is answered or failed.
func (e *Engine) AwaitUpdate(ctx context.Context, run, id string, wait time.Duration) (*cairn.Update, error) {
	view := func(r *runRecord) (*cairn.Update, error) {
		d, err := e.definition(ctx, r.Workflow, r.rev())
		if err != nil {
			return nil, err
		}
		return e.updateRun(r, d).Find(r.Updates, id)
	}
	read := e.readRun
	if wait > 0 {
		read = func(ctx context.Context, run string) (*runRecord, error) {
			return e.holdRun(ctx, run, wait, func(r *runRecord) bool { u, err := view(r); return err != nil || u.Done() })
		}
	}
	r, err := read(ctx, run)
	if err != nil {
		return nil, err
	}
	u, err := view(r)
	if err != nil {
		return nil, err
	}
	return u, e.resolveAnswer(ctx, run, u)
}

// updateRun is what r's updates are decided on.
func (e *Engine) updateRun(r *runRecord, d *definition) update.Run {
	return update.Run{ID: r.ID, Status: r.Status, Steps: d.Steps, State: func(id string) update.Step {
		st := cmp.Or(r.Steps[id], &stepState{})
		return update.Step{Def: d.Step(id), Status: st.Status, Output: st.Output, Error: st.Error, Ops: st.Ops}
	}}
}
