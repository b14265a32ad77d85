package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairn-dev/cairn"
)

// stepKind is what the engine does for the steps of one kind: every
// decision that depends on a step's kind is made through this table.
//
// Adding a kind: an entry in stepKinds (with a status of its own), and
// in the root package its constant and validation (kinds.go). The rest —
// advancing the DAG, timers, the reaper, ending runs — is kind-agnostic.
type stepKind struct {
	// active is the status a step of this kind is in from its start until
	// it is done. Each kind has its own: the run record keeps steps'
	// statuses, not their kinds, and the committer arms timers from the
	// record alone.
	active cairn.StepStatus
	// start takes a pending step whose dependencies completed out of
	// pending: into active, or further (a wait whose event already came).
	start func(e *Engine, r *runRecord, d *definition, s *cairn.Step, fx *effects)
	// wake is when the reaper must next look at an active step of this
	// kind, or the zero time when the step needs no visit.
	wake func(e *Engine, st *stepState, now time.Time) time.Time
	// fire is what the reaper does with an active step whose WakeAt has
	// passed (a sleep ends, a wait times out); nil for a kind that has no
	// due time of its own (a task's attempts end by their leases, which
	// the reaper checks).
	fire func(e *Engine, r *runRecord, s *cairn.Step, fx *effects)
	// visit, when not nil, is what the reaper does, outside any mutation,
	// for an active step of this kind on each visit of its run: work that
	// needs reads or writes beyond the run record (collecting a map's
	// outputs, starting or reading a child run), which the instance that
	// committed the step's change normally does right after the commit.
	visit func(ctx context.Context, e *Engine, r *runRecord, d *definition, s *cairn.Step) error
	// event, when not nil, is what an event sent to the run does to a
	// step of this kind, inside the event's mutation: it reports whether
	// the step took the event (then it is not kept for a later step). The
	// kinds that take the root's "event" option have one, the others none
	// (TestEveryKindHasBehaviour).
	event func(e *Engine, r *runRecord, d *definition, s *cairn.Step, ev eventRecord, fx *effects) bool
}

// taskKind runs an attempt on a worker under a lease.
var taskKind = &stepKind{
	active: cairn.StepReady,
	start: func(e *Engine, r *runRecord, d *definition, s *cairn.Step, fx *effects) {
		e.scheduleAttempt(r, d, s.ID, fx.now, fx)
	},
	// A ready attempt is visited when its backoff ends, and routinely
	// while it may be held: its lease may expire.
	wake: func(e *Engine, st *stepState, now time.Time) time.Time {
		if t, ok := functionWake(e, st, now); ok {
			return t // a function waiting for an event or a run (function.go)
		}
		if st.ReadyAt != nil && st.ReadyAt.After(now) {
			return *st.ReadyAt
		}
		routine := now.Add(e.cfg.ActiveCheckInterval)
		if t := inlineWake(st); !t.IsZero() && t.Before(routine) {
			return t // an inline lease's timeout (inline.go): a claim arms it for a lease object
		}
		return routine
	},
}

var stepKinds = map[cairn.StepKind]*stepKind{
	cairn.KindTask:     taskKind,
	cairn.KindFunction: functionKind, // function.go
	cairn.KindWait: {
		active: cairn.StepWaiting,
		start: func(e *Engine, r *runRecord, d *definition, s *cairn.Step, fx *effects) {
			st := r.Steps[s.ID]
			st.Status = cairn.StepWaiting
			if s.WaitTimeout > 0 {
				t := fx.now.Add(s.WaitTimeout.D())
				st.WakeAt = &t
			}
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalWaitStarted, Step: s.ID, Message: "event " + s.WaitLabel()})
			if ev, ok := e.takePending(r, d, s); ok { // events.go
				e.resumeWait(r, s, ev, fx)
			}
		},
		wake: wakeAt, // the wait's timeout, if it has one
		event: func(e *Engine, r *runRecord, d *definition, s *cairn.Step, ev eventRecord, fx *effects) bool {
			if r.Steps[s.ID].Status != cairn.StepWaiting || !e.waitTakes(r, d, s, ev) {
				return false
			}
			e.resumeWait(r, s, ev, fx)
			return true
		},
		fire: func(e *Engine, r *runRecord, s *cairn.Step, fx *effects) {
			why := cairn.ErrorInfo{Class: cairn.ClassTimeout, Message: "no event " + s.WaitLabel() + " within " + s.WaitTimeout.D().String()}
			e.failStepAndRun(r, s.ID, why, cairn.JournalEntry{}, fx)
		},
	},
	cairn.KindSleep: {
		active: cairn.StepSleeping,
		start: func(e *Engine, r *runRecord, d *definition, s *cairn.Step, fx *effects) {
			st := r.Steps[s.ID]
			wake := fx.now.Add(s.Duration.D())
			st.Status, st.WakeAt = cairn.StepSleeping, &wake
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalSleepStarted, Step: s.ID, Message: "until " + wake.Format(time.RFC3339Nano)})
		},
		wake: wakeAt, // the sleep's end
		fire: func(e *Engine, r *runRecord, s *cairn.Step, fx *effects) {
			st := r.Steps[s.ID]
			st.Status, st.WakeAt = cairn.StepCompleted, nil
			st.Output = json.RawMessage("null")
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepCompleted, Step: s.ID, Message: "sleep ended"})
		},
	},
	cairn.KindMap:   mapKind,   // mapstep.go
	cairn.KindChild: childKind, // child.go
}

// init wires the hooks that start or collect work beyond the run record
// (a map's items, a child run): they reach the committer, which reaches
// stepKinds, so naming them in the table's initializer would be an
// initialization cycle. Every other hook is in the table.
func init() {
	mapKind.start, mapKind.visit = (*Engine).startMap, visitMap             // mapstep.go
	childKind.start, childKind.visit = (*Engine).startChildStep, visitChild // child.go
	functionKind.visit = visitFunction                                      // function.go
}

// activeKinds finds a kind by its active status: the first kind (in the
// vocabulary's order) with it. A function shares the task's.
var activeKinds = func() map[cairn.StepStatus]*stepKind {
	m := map[cairn.StepStatus]*stepKind{}
	for _, kind := range cairn.StepKind("").Values() {
		if k := stepKinds[kind]; m[k.active] == nil {
			m[k.active] = k
		}
	}
	return m
}()

// wakeAt is a step's WakeAt, when it has one.
func wakeAt(_ *Engine, st *stepState, _ time.Time) time.Time {
	if st.WakeAt != nil {
		return *st.WakeAt
	}
	return time.Time{}
}

// kindOf returns the engine's behaviour for a step of the definition.
// Definitions are validated before they are used, so every kind is known.
func kindOf(s *cairn.Step) *stepKind { return stepKinds[s.EffectiveKind()] }
