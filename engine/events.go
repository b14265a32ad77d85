package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/gate"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/engine/internal/timer"
	"github.com/cairn-dev/cairn/engine/internal/trigger"
)

// Events: which wait takes an event sent to a run, and the triggers by
// which a published event starts runs (engine/internal/trigger; docs/
// DECISIONS.md section 38).

func (ev eventRecord) ref() render.Event {
	return render.Event{Name: ev.Name, ID: ev.ID, Payload: ev.Payload}
}

// waitTakes tells whether wait step s takes ev: it waits for its name,
// and its if holds (one that fails is logged, and does not take it).
func (e *Engine) waitTakes(r *runRecord, d *definition, s *cairn.Step, ev eventRecord) bool {
	ok, err := d.events.Takes(s, ev.ref(), func() render.Vars { return e.renderVarsFor(r, d, s.ID) })
	if err != nil {
		e.log.Warn("a wait's if failed on an event: not taken", "run", r.ID, "step", s.ID, "event", ev.Name, "err", err)
	}
	return ok
}

// takePending removes from the run the first kept event wait step s
// takes, and returns it.
func (e *Engine) takePending(r *runRecord, d *definition, s *cairn.Step) (eventRecord, bool) {
	for i, ev := range r.Events {
		if e.waitTakes(r, d, s, ev) {
			r.Events = append(r.Events[:i:i], r.Events[i+1:]...)
			return ev, true
		}
	}
	return eventRecord{}, false
}

// resumeWait completes a waiting step with an event: its payload as
// output, or for a wait of several events {event, id, payload}.
func (e *Engine) resumeWait(r *runRecord, s *cairn.Step, ev eventRecord, fx *effects) {
	st := r.Steps[s.ID]
	st.Status, st.WakeAt = cairn.StepCompleted, nil
	if st.Output = ev.Payload; len(st.Output) == 0 {
		st.Output = json.RawMessage("null")
	}
	if len(s.Events) > 0 {
		st.Output = object.JSON(map[string]any{"event": ev.Name, "id": ev.ID, "payload": st.Output})
	}
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepCompleted, Step: s.ID, Message: "event " + ev.Name + " received", Data: ev.Payload})
	r.Updates.Took(ev.Update, s.ID)
}

// Publish publishes an event: each workflow whose newest version has a
// trigger the event matches gets a run (engine/internal/trigger).
func (e *Engine) Publish(ctx context.Context, req cairn.PublishRequest) (*cairn.PublishResult, error) {
	return trigger.Publish(ctx, trigger.Host{Store: e.store, Keys: e.keys, MaxPayload: e.cfg.MaxOutputBytes, Start: e.startTriggered,
		Cancel: func(ctx context.Context, ev render.Event) ([]string, error) {
			return trigger.CancelRuns(ctx, e.store, e.keys, e.now(), ev, func(ctx context.Context, run string, age time.Duration) (bool, bool, error) {
				return e.cancelByEvent(ctx, run, ev, age)
			})
		}}, req)
}

// cancelByEvent cancels run when a cancel_on of its workflow matches ev
// (cancelled), or reports it gone: ended, or missing well after its
// entry was written (a start that died before its record).
func (e *Engine) cancelByEvent(ctx context.Context, run string, ev render.Event, entryAge time.Duration) (bool, bool, error) {
	r, err := e.readRun(ctx, run)
	if isNotFound(err) || errs.IsNotFound(err) {
		return false, entryAge > 2*e.cfg.MaxRequestTime, nil
	}
	if err != nil || r.Status.Terminal() {
		return false, err == nil, err
	}
	d, err := e.definition(ctx, r.Workflow, r.rev())
	if err != nil {
		return false, false, err
	}
	ok, err := d.events.Cancels(ev, e.renderVarsFor(r, d, ""), e.now().Sub(r.CreatedAt))
	if err != nil || !ok {
		return false, false, nil // an if that fails cancels nothing
	}
	_, err = e.CancelRun(ctx, run, "cancelled by event "+ev.Name+" ("+ev.ID+")")
	return err == nil, false, err
}

// startTriggered starts the run of workflow's newest version for ev,
// when that version has a trigger ev matches.
func (e *Engine) startTriggered(ctx context.Context, workflow string, ev render.Event) (cairn.TriggeredRun, error) {
	v, err := e.latestVersion(ctx, workflow)
	if err != nil {
		return cairn.TriggeredRun{}, fmt.Errorf("trigger of workflow %s: %w", workflow, err)
	}
	d, err := e.definition(ctx, workflow, v)
	if err != nil {
		return cairn.TriggeredRun{}, err
	}
	if ok, err := d.events.Triggered(ev); !ok {
		if err != nil {
			e.log.Warn("a trigger's if failed on an event: no run", "workflow", workflow, "event", ev.Name, "id", ev.ID, "err", err)
		}
		return cairn.TriggeredRun{}, nil
	}
	if g := d.events.Gate; g != nil {
		run, err := e.gates.Join(ctx, g, workflow, ev) // debounce or batch
		run.Version = d.Version
		return run, err
	}
	return e.startForEvent(ctx, workflow, d.Version, ev.Payload, ev, "event:"+ev.ID)
}

// startForEvent starts a run of workflow with input for event ev, once
// per idempotency key.
func (e *Engine) startForEvent(ctx context.Context, workflow, version string, input json.RawMessage, ev render.Event, key string) (cairn.TriggeredRun, error) {
	res, err := e.startRun(ctx, cairn.StartRequest{Workflow: workflow, Version: version, Input: input, IdempotencyKey: key},
		func(r *runRecord, _ *definition, _ time.Time) { r.Event = &cairn.EventRef{Name: ev.Name, ID: ev.ID} })
	if err != nil {
		return cairn.TriggeredRun{}, err
	}
	return cairn.TriggeredRun{Workflow: workflow, Version: res.Run.Version, Run: res.Run.ID, Existed: res.Existed}, nil
}

// newGates wires debounce and batch windows (engine/internal/gate) to e.
// A fired window and its events' id markers are kept as long as an ended
// run and its idempotency key (Config.Retention), so a publish is
// idempotent by id as long with a window as without.
func newGates(e *Engine) *gate.Gates {
	return gate.New(gate.Host{Store: e.store, Keys: e.keys, Now: e.now, Log: e.log, MaxInput: e.cfg.MaxOutputBytes,
		Retention: e.cfg.Retention, MaxRequest: e.cfg.MaxRequestTime,
		TimerDue: timer.Due, PutTimer: e.timers.Put, DropTimers: e.timers.Drop, DropOrphans: e.timers.DropOrphans,
		Start: func(ctx context.Context, wf string, input json.RawMessage, ev render.Event, key string) (cairn.TriggeredRun, error) {
			return e.startForEvent(ctx, wf, "", input, ev, key)
		}})
}
