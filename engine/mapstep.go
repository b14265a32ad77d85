package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/par"
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
//     shard — mapShardSize consecutive items — is finished; the commit
//     that finishes a shard writes it as maps/<run>/<step>/out-<k>-<sha>
//     before its swap, and drops the held outputs. Dispatch stays within
//     mapWindow shards of the lowest unwritten one, so held outputs stay
//     bounded whatever order items finish in;
//   - when every item is done the step collects: the instance that
//     committed the last item (or the reaper, as a fallback) reads the
//     shards and completes the step with the outputs in input order.
//
// The record therefore holds counters, one hash per shard and at most
// max_concurrency running items plus a window of held outputs — never an
// entry per item.
const (
	mapShardSize = 100
	// mapCacheEntries bounds the items objects an instance keeps decoded.
	mapCacheEntries = 64
	// mapErrorsKept is how many item errors a map step keeps (and
	// journals); the rest are counted.
	mapErrorsKept = 10
)

// mapState is a map step's progress in the run record.
type mapState struct {
	Total     int    `json:"total"`
	ItemsKey  string `json:"items_key"`
	Next      int    `json:"next"`
	Running   int    `json:"running"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	// Held are the outputs (null for a failed item) of finished items
	// whose shard is not written yet, by index.
	Held map[string]json.RawMessage `json:"held,omitempty"`
	// ShardDone counts the finished items of each shard.
	ShardDone []int `json:"shard_done"`
	// Shards is the content hash of each written output shard.
	Shards []string `json:"shards"`
	// Errors are the first item errors (Step names the item).
	Errors []cairn.ErrorInfo `json:"errors,omitempty"`
	// Collect: every item is done; the outputs are being collected.
	Collect bool `json:"collect,omitempty"`
}

// preWrite is an object a commit writes before its swap: content that
// the new record refers to. Written unconditionally (plain put): its key
// is derived from its content, so a rewrite is harmless.
type preWrite struct {
	key  string
	data []byte
}

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

func contentSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
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
	var items []json.RawMessage
	if err := json.Unmarshal(out, &items); err != nil || out[0] != '[' {
		fail(cairn.ClassRenderError, fmt.Sprintf("items of map step %s: rendered %s, not an array", s.ID, render.Clip(string(out))))
		return
	}
	if len(items) > cairn.MaxMapItems {
		fail(cairn.ClassRenderError, fmt.Sprintf("items of map step %s: %d items, over the limit of %d", s.ID, len(items), cairn.MaxMapItems))
		return
	}
	sum := contentSum(out)
	m := &mapState{Total: len(items), ItemsKey: e.keys.MapItems(r.ID, s.ID, sum),
		ShardDone: make([]int, (len(items)+mapShardSize-1)/mapShardSize), Shards: make([]string, (len(items)+mapShardSize-1)/mapShardSize)}
	st.Status, st.Map = cairn.StepMapping, m
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalMapStarted, Step: s.ID, Message: fmt.Sprintf("%d items, at most %d at a time", len(items), s.EffectiveMaxConcurrency())})
	if len(items) == 0 {
		e.finishMap(r, d, s, fx)
		return
	}
	fx.writes = append(fx.writes, preWrite{key: m.ItemsKey, data: out})
	e.fillMap(r, d, s, fx)
}

// mapWindow is how many shards past the lowest unwritten one items are
// dispatched from.
func mapWindow(s *cairn.Step) int {
	return s.EffectiveMaxConcurrency()/mapShardSize + 2
}

// fillMap starts items up to max_concurrency, within the shard window.
func (e *Engine) fillMap(r *runRecord, d *definition, s *cairn.Step, fx *effects) {
	m := r.Steps[s.ID].Map
	low := 0
	for low < len(m.Shards) && m.Shards[low] != "" {
		low++
	}
	limit := min((low+mapWindow(s))*mapShardSize, m.Total)
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
	if m.Held == nil {
		m.Held = map[string]json.RawMessage{}
	}
	m.Held[strconv.Itoa(idx)] = out
	k := idx / mapShardSize
	m.ShardDone[k]++
	if lo, hi := k*mapShardSize, min((k+1)*mapShardSize, m.Total); m.ShardDone[k] == hi-lo {
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i := lo; i < hi; i++ {
			if i > lo {
				buf.WriteByte(',')
			}
			key := strconv.Itoa(i)
			buf.Write(m.Held[key])
			delete(m.Held, key)
		}
		buf.WriteByte(']')
		data := buf.Bytes()
		m.Shards[k] = contentSum(data)
		fx.writes = append(fx.writes, preWrite{key: e.keys.MapShard(r.ID, base, k, m.Shards[k]), data: data})
	}
	if len(m.Held) == 0 {
		m.Held = nil
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
	if len(m.Errors) < mapErrorsKept {
		ie := why
		ie.Step = item
		m.Errors = append(m.Errors, ie)
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepFailed, Step: item, Attempt: n, Worker: worker, Error: &why})
	}
	if m.Failed > s.ToleratedOf(m.Total) {
		delete(r.Steps, item)
		m.Running--
		mapErr := why
		mapErr.Message = fmt.Sprintf("item %d failed: %s", idx, why.Message)
		if m.Failed > 1 {
			mapErr.Message = fmt.Sprintf("%d items failed (tolerated: %d); item %d: %s", m.Failed, s.ToleratedOf(m.Total), idx, why.Message)
		}
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
	parts := make([][]json.RawMessage, len(shards))
	errs := make([]error, len(shards))
	par.Each(8, len(shards), func(k int) {
		o, err := e.store.Get(ctx, e.keys.MapShard(run, step, k, shards[k]))
		if err == nil {
			err = json.Unmarshal(o.Data, &parts[k])
		}
		errs[k] = err
	})
	size := 2
	for k, err := range errs {
		if err != nil {
			return fmt.Errorf("map %s shard %d: %w", step, k, err)
		}
		for _, p := range parts[k] {
			size += len(p) + 1
		}
	}
	var out json.RawMessage
	var tooLarge error
	if size > e.cfg.MaxOutputBytes {
		tooLarge = fmt.Errorf("the collected output of map step %s is %d bytes, over the %d-byte output limit", step, size, e.cfg.MaxOutputBytes)
	} else {
		all := make([]json.RawMessage, 0, st.Map.Total)
		for _, p := range parts {
			all = append(all, p...)
		}
		out = object.JSON(all)
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

// mapItem returns element i of a map step's items (from the instance's
// cache of decoded items objects, which are immutable: first in, first
// out, through Peek and Add only).
func (e *Engine) mapItem(ctx context.Context, key string, i int) (json.RawMessage, error) {
	items, ok := e.items.Peek(key)
	if !ok {
		o, err := e.store.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(o.Data, &items); err != nil {
			return nil, fmt.Errorf("items object %s: %w", key, err)
		}
		e.items.Add(key, items)
	}
	if i < 0 || i >= len(items) {
		return nil, fmt.Errorf("map item %d: the items object has %d", i, len(items))
	}
	return items[i], nil
}

// mapProgress is a map step's progress for views.
func mapProgress(st *stepState) *cairn.MapProgress {
	if st.Map == nil {
		return nil
	}
	m := st.Map
	return &cairn.MapProgress{Total: m.Total, Completed: m.Completed, Failed: m.Failed, Running: m.Running, Errors: append([]cairn.ErrorInfo{}, m.Errors...)}
}

// itemSteps lists the map items present in a run record, sorted.
func itemSteps(r *runRecord) []string {
	var out []string
	for id := range r.Steps {
		if _, _, ok := keys.SplitItem(id); ok {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// droppedItemJournal says which journal entries of map items are not
// kept: the routine ones (ready, claimed, completed, retried, requeued),
// so a 10,000-item map does not grow the journal by an entry per item.
// Failures and lost leases are kept (item failures bounded by
// mapErrorsKept).
func droppedItemJournal(j cairn.JournalEntry) bool {
	if !strings.Contains(j.Step, ".") {
		return false
	}
	switch j.Type {
	case cairn.JournalStepReady, cairn.JournalStepClaimed, cairn.JournalStepCompleted, cairn.JournalStepRetryScheduled, cairn.JournalStepRequeued:
		return true
	}
	return false
}

// preWrites writes a commit's objects before its swap.
func (e *Engine) preWrites(ctx context.Context, ws []preWrite) error {
	for _, w := range ws {
		if _, err := e.store.Put(ctx, w.key, w.data, blob.WriteOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// itemVars adds a map item's element and index to vars, when step is a
// map item; it returns the index, or nil.
func (e *Engine) itemVars(ctx context.Context, r *runRecord, step string, vars *render.Vars) (*int, error) {
	base, idx, ok := keys.SplitItem(step)
	if !ok {
		return nil, nil
	}
	bs := r.Steps[base]
	if bs == nil || bs.Map == nil {
		return nil, fmt.Errorf("map item %s: its map step has no items", step)
	}
	item, err := e.mapItem(ctx, bs.Map.ItemsKey, idx)
	if err != nil {
		return nil, err
	}
	vars.Item, vars.Index, vars.HasItem = item, idx, true
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
