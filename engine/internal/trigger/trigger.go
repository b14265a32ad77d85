// Package trigger is the engine's event matching: the compiled
// conditions of a definition's waits and triggers, the trigger index in
// the bucket (triggers/<sha256 of the event name>/<workflow>, written when
// a version with triggers is registered), and a publish: one listing of
// the event's index, then, per workflow listed, a start of its newest
// version when that version's trigger matches the event.
package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/gate"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// Bounds of a publish.
const (
	// MaxWorkflows is how many workflows one publish matches: the index
	// of an event is listed in one page of this many (and one more, to
	// tell that there are more).
	MaxWorkflows = 100
	// Parallel is how many of a publish's workflows are started at once.
	Parallel = 8
	// ConditionCost caps the CEL cost of a trigger's if on one event
	// (render's units: about 1 per node, a tenth per string byte read), so
	// a publish spends at most MaxWorkflows times it.
	ConditionCost = 100_000
)

// Compiled is a definition's compiled event conditions.
type Compiled struct {
	waits  map[string]*render.Condition // a wait step's if, by step id
	on     map[string]*render.Condition // a trigger's if, by event (nil: any)
	cancel map[string][]cancelCond      // the cancel_on entries, by event
	// Gate is the workflow's debounce or batch (nil: none): its triggered
	// events join windows instead of starting runs (engine/internal/gate).
	Gate *gate.Spec
}

type cancelCond struct {
	cond    *render.Condition // nil: any event of the name
	timeout time.Duration     // 0: none
}

// Compile compiles the ifs of w's wait steps and triggers; field names w
// in errors ("workflows[0]").
func Compile(w *cairn.Workflow, field string) (*Compiled, error) {
	c := &Compiled{waits: map[string]*render.Condition{}, on: map[string]*render.Condition{}, cancel: map[string][]cancelCond{}}
	var err error
	if c.Gate, err = gate.Compile(w, field); err != nil {
		return nil, err
	}
	for i, x := range w.CancelOn {
		cc := cancelCond{timeout: x.Timeout.D()}
		if x.If != "" {
			var err error
			if cc.cond, err = render.CompileEventCondition(x.If, render.Limits{ExprCost: ConditionCost, TemplateCost: ConditionCost}); err != nil {
				return nil, cairn.ValidationError{{Field: fmt.Sprintf("%s.cancel_on[%d].if", field, i), Message: err.Error()}}
			}
		}
		c.cancel[x.Event] = append(c.cancel[x.Event], cc)
	}
	for i, s := range w.Steps {
		if s.If == "" {
			continue
		}
		cond, err := render.CompileEventCondition(s.If, render.Limits{})
		if err != nil {
			return nil, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].if", field, i), Message: err.Error()}}
		}
		c.waits[s.ID] = cond
	}
	for i, t := range w.On {
		var cond *render.Condition
		if t.If != "" {
			var err error
			if cond, err = render.CompileEventCondition(t.If, render.Limits{ExprCost: ConditionCost, TemplateCost: ConditionCost}); err != nil {
				return nil, cairn.ValidationError{{Field: fmt.Sprintf("%s.on[%d].if", field, i), Message: err.Error()}}
			}
		}
		c.on[t.Event] = cond
	}
	return c, nil
}

// Takes tells whether wait step s takes ev: one of its names, and its if
// holds on ev and what vars gives (the run's values, asked only for an
// if). An if that fails is an error, and not a match.
func (c *Compiled) Takes(s *cairn.Step, ev render.Event, vars func() render.Vars) (bool, error) {
	if !slices.Contains(s.WaitEvents(), ev.Name) {
		return false, nil
	}
	cond := c.waits[s.ID]
	if cond == nil {
		return true, nil
	}
	v := vars()
	v.Event = &ev
	return cond.Holds(v)
}

// CancelEvents are the event names of the definition's cancel_on.
func (c *Compiled) CancelEvents() []string {
	return slices.Sorted(maps.Keys(c.cancel))
}

// Cancels tells whether ev cancels a run age after its start, with the
// run's values vars: a cancel_on entry of its name whose timeout has not
// passed and whose if holds.
func (c *Compiled) Cancels(ev render.Event, vars render.Vars, age time.Duration) (bool, error) {
	vars.Event = &ev
	for _, cc := range c.cancel[ev.Name] {
		if cc.timeout > 0 && age > cc.timeout {
			continue
		}
		if cc.cond == nil {
			return true, nil
		}
		if ok, err := cc.cond.Holds(vars); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// Triggered tells whether the definition has a trigger of ev's name
// whose if holds on ev.
func (c *Compiled) Triggered(ev render.Event) (bool, error) {
	cond, ok := c.on[ev.Name]
	if !ok || cond == nil {
		return ok, nil
	}
	return cond.Holds(render.Vars{Event: &ev})
}

// Index writes the index entries of the triggers of registered versions
// (create-only: an entry an earlier version wrote stays). An entry says
// only that the workflow may have a trigger of the event: a publish
// checks the workflow's newest version.
func Index(ctx context.Context, store *blob.Bucket, k keys.Layout, wfs []cairn.Workflow) error {
	for _, w := range wfs {
		var entries []string
		for _, t := range w.On {
			entries = append(entries, k.Trigger(t.Event, w.Name))
		}
		for _, c := range w.CancelOn {
			entries = append(entries, k.Trigger(c.Event, cancelFlag)) // a publish of it looks for runs to cancel
		}
		for _, key := range entries {
			_, err := store.Create(ctx, key, []byte(`{"workflow":"`+w.Name+`"}`))
			if err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
				return err
			}
		}
	}
	return nil
}

// cancelFlag is the trigger index entry saying some workflow has (or had)
// a cancel_on of the event: "~" sorts after every workflow name, and no
// workflow is named so.
const cancelFlag = "~cancel"

// Host is what a publish needs of the engine.
type Host struct {
	Store      *blob.Bucket
	Keys       keys.Layout
	MaxPayload int // the largest payload (a run's input)
	// Start starts the run of workflow's newest version for ev when that
	// version has a trigger ev matches (version "" when it has none).
	Start func(ctx context.Context, workflow string, ev render.Event) (cairn.TriggeredRun, error)
	// Cancel cancels the running runs ev's cancel_on entries match
	// (CancelRuns), when some workflow has a cancel_on of its name.
	Cancel func(ctx context.Context, ev render.Event) ([]string, error)
}

// Publish checks req, then starts, for each workflow of the event's index
// (at most MaxWorkflows, by name), the run its trigger asks for. An event
// without an id gets a new one.
func Publish(ctx context.Context, h Host, req cairn.PublishRequest) (*cairn.PublishResult, error) {
	if err := check(req, h.MaxPayload); err != nil {
		return nil, err
	}
	ev := render.Event{Name: req.Name, ID: req.ID, Payload: req.Payload}
	if ev.ID == "" {
		ev.ID = ulid.Make().String()
	}
	prefix := h.Keys.TriggersOf(ev.Name)
	page, err := h.Store.List(ctx, blob.ListOptions{Prefix: prefix, PageSize: MaxWorkflows + 1})
	if err != nil {
		return nil, err
	}
	res := &cairn.PublishResult{ID: ev.ID, Runs: []cairn.TriggeredRun{}, Cancelled: []string{}}
	objs := page.Objects
	cancels := page.NextPageToken != "" // the flag may be past the page
	if n := len(objs); n > 0 && objs[n-1].Key == prefix+cancelFlag {
		cancels, objs = true, objs[:n-1]
	}
	if len(objs) > MaxWorkflows || page.NextPageToken != "" {
		res.Truncated, objs = true, objs[:min(len(objs), MaxWorkflows)]
	}
	runs := make([]cairn.TriggeredRun, len(objs))
	errs := make([]error, len(objs))
	par.Each(Parallel, len(objs), func(i int) {
		runs[i], errs[i] = h.Start(ctx, strings.TrimPrefix(objs[i].Key, prefix), ev)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, r := range runs {
		if r.Version != "" {
			res.Runs = append(res.Runs, r)
		}
	}
	sort.Slice(res.Runs, func(i, j int) bool { return res.Runs[i].Workflow < res.Runs[j].Workflow })
	if cancels && h.Cancel != nil {
		res.Cancelled, err = h.Cancel(ctx, ev)
	}
	return res, err
}

func check(req cairn.PublishRequest, maxPayload int) error {
	return CheckEvent(req.Name, req.ID, req.Payload, "payload", maxPayload)
}

// CheckEvent checks an event's name, its id (optional) and its payload
// (field), at most maxPayload bytes: a published event's, an event's or
// an update's sent to a run.
func CheckEvent(name, id string, payload json.RawMessage, field string, maxPayload int) error {
	if err := keys.Text.Check("name", name); err != nil {
		return err
	}
	if id != "" {
		if err := keys.Text.Check("id", id); err != nil {
			return err
		}
	}
	if len(payload) > 0 && !json.Valid(payload) {
		return cairn.ValidationError{{Field: field, Message: "not valid JSON"}}
	}
	if len(payload) > maxPayload {
		return cairn.ValidationError{{Field: field, Message: fmt.Sprintf("%d bytes, over the %d-byte limit of one payload", len(payload), maxPayload)}}
	}
	return nil
}

// MaxCancels bounds the runs one publish looks at for cancel_on.
const MaxCancels = 1000

// ArmCancels writes run's cancel_on index entries, one per event name
// (plain puts, before the run's record: a run without its entries would
// not be cancelled; an entry without its run is dropped when seen).
func ArmCancels(ctx context.Context, store *blob.Bucket, k keys.Layout, events []string, run string) error {
	for _, name := range events {
		if _, err := store.Put(ctx, k.CancelOn(name, run), []byte(`{}`), blob.WriteOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// Visit looks at a run an event may cancel: whether the event cancelled
// it, and whether the run has ended (or does not exist), so its entry can
// go.
type Visit func(ctx context.Context, run string, entryAge time.Duration) (cancelled, gone bool, err error)

// CancelRuns visits the runs of ev's cancel_on index (at most
// MaxCancels, eight at a time), drops the entries of runs that are gone,
// and returns the runs the event cancelled, sorted. One LIST, and what
// visit reads and writes.
func CancelRuns(ctx context.Context, store *blob.Bucket, k keys.Layout, now time.Time, ev render.Event, visit Visit) ([]string, error) {
	prefix := k.CancelsOf(ev.Name)
	page, err := store.List(ctx, blob.ListOptions{Prefix: prefix, PageSize: MaxCancels})
	if err != nil {
		return nil, err
	}
	cancelled := make([]bool, len(page.Objects))
	errs := make([]error, len(page.Objects))
	par.Each(8, len(page.Objects), func(i int) {
		o := page.Objects[i]
		var gone bool
		cancelled[i], gone, errs[i] = visit(ctx, strings.TrimPrefix(o.Key, prefix), now.Sub(o.ModTime))
		if errs[i] == nil && (gone || cancelled[i]) {
			if err := store.Delete(ctx, o.Key); err != nil && !errors.Is(err, blob.ErrNotFound) {
				errs[i] = err
			}
		}
	})
	out := []string{}
	for i, c := range cancelled {
		if c {
			out = append(out, strings.TrimPrefix(page.Objects[i].Key, prefix))
		}
	}
	sort.Strings(out)
	return out, errors.Join(errs...)
}
