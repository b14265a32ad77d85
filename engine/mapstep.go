package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/mapstep"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// Map steps. A map step runs its body once per element of an array its
// items expression renders. Its items never live in the run record:
//
//   - the rendered array is one object, maps/<run>/<step>/items-<sha>,
//     written before the commit that starts the step (content-addressed,
//     so racing instances that render different arrays never overwrite
//     each other's);
//   - each running item is a virtual step of the run record, <step>.<i>,
//     with its own attempts, retry budget and leases
//     (leases/<run>/<step>.<i>/<n>): claims, heartbeats, completes, fails,
//     expiry and retries are a task's, unchanged. At most max_concurrency
//     of them exist at a time;
//   - the outputs of finished items wait in the record (held) until their
//     shard — mapstep.ShardSize consecutive items — is finished; the commit
//     that finishes a shard writes it as maps/<run>/<step>/out-<k>-<sha>
//     before its swap, and drops the held outputs. Dispatch stays within
//     a window of shards past the lowest unwritten one, so held outputs
//     stay bounded whatever order items finish in;
//   - when every item is done the step collects: the instance that
//     committed the last item (or the reaper, as a fallback) reads the
//     shards and completes the step with the outputs in input order.
//
// The record therefore holds counters, one hash per shard and at most
// max_concurrency running items plus a window of held outputs — never an
// entry per item.
// mapState is a map step's progress in the run record; the bookkeeping
// that decides nothing (shards, window, collection reads) is
// engine/internal/mapstep.
type mapState = mapstep.State

// visitMap is the map kind's visit: collect the outputs of a map whose
// items are all done.
func visitMap(ctx context.Context, e *Engine, r *runRecord, d *definition, s *cairn.Step) error {
	if st := r.Steps[s.ID]; st.Map == nil || !st.Map.Collect {
		return nil
	}
	return e.collectMap(ctx, r.ID, d, s.ID)
}

// baseStep is the definition's step id of a step or map item id.
func baseStep(id string) string {
	base, _, _ := keys.SplitItem(id)
	return base
}

// Step returns the step of the definition named by a step id or a map
// item id (the map step), or an on_failure step; nil when none.
func (d *definition) Step(id string) *cairn.Step {
	if s := d.Workflow.Step(baseStep(id)); s != nil {
		return s
	}
	for i := range d.OnFailure {
		if d.OnFailure[i].ID == id {
			return &d.OnFailure[i]
		}
	}
	return nil
}

// mapKind is the map step's entry in stepKinds.
var mapKind = &stepKind{
	active: cairn.StepMapping,
	// start is set in init: it reaches advance, which reads stepKinds.
	// A collecting map is visited at once (collect is I/O the reaper
	// does in visit); running items are tasks with their own wake-ups.
	wake: func(e *Engine, st *stepState, now time.Time) time.Time {
		if st.Map != nil && st.Map.Collect {
			return now
		}
		return time.Time{}
	},
	// visit (collect) is set in init too.
}

// startMap renders the items, writes them as one object and starts the
// first items.
func (e *Engine) startMap(r *runRecord, d *definition, s *cairn.Step, fx *effects) {
	st := r.Steps[s.ID]
	fail := func(class, msg string) {
		why := cairn.ErrorInfo{Class: class, Message: msg}
		e.failStepAndRun(r, s.ID, why, cairn.JournalEntry{}, fx)
	}
	out, err := d.items[s.ID].Render(e.renderVarsFor(r, d, s.ID))
	if err != nil {
		fail(cairn.ClassRenderError, fmt.Sprintf("items of map step %s: %v", s.ID, err))
		return
	}
	n, err := mapstep.CountItems(s.ID, out)
	if err != nil {
		fail(cairn.ClassRenderError, err.Error())
		return
	}
	m := mapstep.New(n, e.keys.MapItems(r.ID, s.ID, mapstep.Sum(out)))
	st.Status, st.Map = cairn.StepMapping, m
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalMapStarted, Step: s.ID, Message: fmt.Sprintf("%d items, at most %d at a time", n, s.EffectiveMaxConcurrency())})
	if n == 0 {
		e.finishMap(r, d, s, fx)
		return
	}
	fx.writes = append(fx.writes, mapstep.PreWrite{Key: m.ItemsKey, Data: out})
	e.fillMap(r, d, s, fx)
}

// fillMap starts items up to max_concurrency, within the shard window.
func (e *Engine) fillMap(r *runRecord, d *definition, s *cairn.Step, fx *effects) {
	m := r.Steps[s.ID].Map
	limit := m.Limit(s.EffectiveMaxConcurrency())
	for m.Running < s.EffectiveMaxConcurrency() && m.Next < limit {
		id := keys.ItemID(s.ID, m.Next)
		r.Steps[id] = &stepState{Status: cairn.StepPending}
		e.scheduleAttempt(r, d, id, fx.now, fx)
		m.Next++
		m.Running++
	}
}

// itemEnded records a finished item (out is its output, or null for a
// failed item), writes its shard when the shard is finished, and starts
// more items or finishes the map.
func (e *Engine) itemEnded(r *runRecord, d *definition, item string, out json.RawMessage, fx *effects) {
	base, idx, _ := keys.SplitItem(item)
	s := d.Step(base)
	st := r.Steps[base]
	m := st.Map
	delete(r.Steps, item)
	m.Running--
	if k, data, finished := m.Hold(idx, out); finished {
		fx.writes = append(fx.writes, mapstep.PreWrite{Key: e.keys.MapShard(r.ID, base, k, m.Shards[k]), Data: data})
	}
	if m.Completed+m.Failed == m.Total {
		e.finishMap(r, d, s, fx)
		return
	}
	e.fillMap(r, d, s, fx)
}

// itemCompleted applies an item's complete.
func (e *Engine) itemCompleted(r *runRecord, d *definition, item string, out json.RawMessage, fx *effects) {
	m := r.Steps[baseStep(item)].Map
	m.Completed++
	e.itemEnded(r, d, item, out, fx)
}

// itemFailed applies an item that failed for good (its retries spent, or
// a failure that is not retried): tolerated, its output is null; else the
// map step fails, and with it the run.
func (e *Engine) itemFailed(r *runRecord, d *definition, item string, n int, worker string, why cairn.ErrorInfo, fx *effects) {
	base, idx, _ := keys.SplitItem(item)
	s := d.Step(base)
	m := r.Steps[base].Map
	m.Failed++
	if len(m.Errors) < mapstep.ErrorsKept {
		ie := why
		ie.Step = item
		m.Errors = append(m.Errors, ie)
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepFailed, Step: item, Attempt: n, Worker: worker, Error: &why})
	}
	if m.Failed > s.ToleratedOf(m.Total) {
		delete(r.Steps, item)
		m.Running--
		mapErr := why
		mapErr.Message = m.FailureMessage(idx, why.Message, s.ToleratedOf(m.Total))
		e.failStepAndRun(r, base, mapErr, cairn.JournalEntry{}, fx)
		return
	}
	e.itemEnded(r, d, item, json.RawMessage("null"), fx)
}

// finishMap marks a map whose items are all done for collection, and asks
// this instance to collect once the commit lands (the reaper collects if
// it dies first). An empty map completes at once.
func (e *Engine) finishMap(r *runRecord, d *definition, s *cairn.Step, fx *effects) {
	st := r.Steps[s.ID]
	if st.Map.Total == 0 {
		e.completeMap(r, d, s, json.RawMessage("[]"), fx)
		return
	}
	st.Map.Collect = true
	run, step := r.ID, s.ID
	e.inBackground(fx, run, step, "map: collecting the outputs failed; the reaper collects them", func(ctx context.Context) error {
		return e.collectMap(ctx, run, d, step)
	})
}

func (e *Engine) completeMap(r *runRecord, d *definition, s *cairn.Step, out json.RawMessage, fx *effects) {
	st := r.Steps[s.ID]
	m := st.Map
	st.Status, st.Output, st.WakeAt = cairn.StepCompleted, out, nil
	m.Collect = false
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepCompleted, Step: s.ID,
		Message: fmt.Sprintf("%d items: %d completed, %d failed (tolerated)", m.Total, m.Completed, m.Failed)})
	e.advance(r, d, fx)
}

// collectMap reads a finished map's output shards and completes the step
// with their outputs in input order. Any number of instances may collect
// at once: the shards are immutable and the mutation applies only while
// the step still collects.
func (e *Engine) collectMap(ctx context.Context, run string, d *definition, step string) error {
	r, err := e.readRun(ctx, run)
	if err != nil {
		return err
	}
	st := r.Steps[step]
	if r.Status.Terminal() || st == nil || st.Status != cairn.StepMapping || st.Map == nil || !st.Map.Collect {
		return nil
	}
	shards := append([]string(nil), st.Map.Shards...)
	shard := func(k int, sum string) string { return e.keys.MapShard(run, step, k, sum) }
	out, err := mapstep.Collect(ctx, e.store, shard, step, shards, st.Map.Total, e.cfg.MaxOutputBytes)
	var tooLarge *mapstep.TooLargeError
	if err != nil && !errors.As(err, &tooLarge) {
		return err
	}
	s := d.Step(step)
	_, err = mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (struct{}, error) {
		st := r.Steps[step]
		if r.Status.Terminal() || st == nil || st.Status != cairn.StepMapping || st.Map == nil || !st.Map.Collect ||
			!slices.Equal(st.Map.Shards, shards) {
			return struct{}{}, nil
		}
		if tooLarge != nil {
			st.Map.Collect = false
			e.failStepAndRun(r, step, cairn.ErrorInfo{Class: cairn.ClassOutputTooLarge, Message: tooLarge.Error()}, cairn.JournalEntry{}, fx)
			return struct{}{}, nil
		}
		e.completeMap(r, d, s, out, fx)
		return struct{}{}, nil
	})
	return err
}

// itemVars adds a map item's element and index to vars, when step is a
// map item; it returns the index, or nil.
func (e *Engine) itemVars(ctx context.Context, r *runRecord, step string, vars *render.Vars) (*int, error) {
	base, idx, ok := keys.SplitItem(step)
	if !ok {
		return nil, nil
	}
	var m *mapState
	if bs := r.Steps[base]; bs != nil {
		m = bs.Map
	}
	if err := e.items.Vars(ctx, m, step, idx, vars); err != nil {
		return nil, err
	}
	return &idx, nil
}

// recordStep is the run record's step of a lease: a map item's virtual
// step, else the step.
func recordStep(l *cairn.Lease) string {
	if l.Item != nil {
		return keys.ItemID(l.Step, *l.Item)
	}
	return l.Step
}

// visitSteps does, for each active step whose kind has a visit, that
// visit (the reaper's fallback for work an instance starts after a
// commit), on every reaper visit of the run: the visit decides whether
// there is anything to do.
func (e *Engine) visitSteps(ctx context.Context, r *runRecord, d *definition) error {
	if err := e.checkParent(ctx, r); err != nil || r.Status == cairn.RunPaused { // child.go; pause.go
		return err
	}
	for i := range d.Steps {
		s := &d.Steps[i]
		st := r.Steps[s.ID]
		k := kindOf(s)
		if st == nil || k.visit == nil || st.Status != k.active {
			continue
		}
		if err := k.visit(ctx, e, r, d, s); err != nil {
			return err
		}
	}
	return nil
}

// itemEnded answers already_applied to a complete or fail of a map item
// that has finished (it left the record). end calls it only for a live
// lease: a new attempt of an item exists only once the previous one's
// lease was fenced or its fail applied, so a live lease of a finished item
// is the attempt that finished it — its own complete or fail was applied
// (a retried call whose first answer was lost).
func itemEnded(r *runRecord, tok leaseToken) error {
	base, idx, ok := keys.SplitItem(tok.Step)
	if !ok || r.Steps[tok.Step] != nil {
		return nil
	}
	if bs := r.Steps[base]; bs != nil && bs.Map != nil && idx < bs.Map.Next {
		return reject(cairn.ReasonAlreadyApplied, "item %d of map step %s already ended", idx, base)
	}
	return nil
}
