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
	"slices"
	"sort"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
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
	waits map[string]*render.Condition // a wait step's if, by step id
	on    map[string]*render.Condition // a trigger's if, by event (nil: any)
}

// Compile compiles the ifs of w's wait steps and triggers; field names w
// in errors ("workflows[0]").
func Compile(w *cairn.Workflow, field string) (*Compiled, error) {
	c := &Compiled{waits: map[string]*render.Condition{}, on: map[string]*render.Condition{}}
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
		for _, t := range w.On {
			_, err := store.Create(ctx, k.Trigger(t.Event, w.Name), []byte(`{"workflow":"`+w.Name+`"}`))
			if err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
				return err
			}
		}
	}
	return nil
}

// Host is what a publish needs of the engine.
type Host struct {
	Store      *blob.Bucket
	Keys       keys.Layout
	MaxPayload int // the largest payload (a run's input)
	// Start starts the run of workflow's newest version for ev when that
	// version has a trigger ev matches (version "" when it has none).
	Start func(ctx context.Context, workflow string, ev render.Event) (cairn.TriggeredRun, error)
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
	res := &cairn.PublishResult{ID: ev.ID, Runs: []cairn.TriggeredRun{}}
	objs := page.Objects
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
	return res, nil
}

func check(req cairn.PublishRequest, maxPayload int) error {
	if err := keys.Text.Check("name", req.Name); err != nil {
		return err
	}
	if req.ID != "" {
		if err := keys.Text.Check("id", req.ID); err != nil {
			return err
		}
	}
	if len(req.Payload) > 0 && !json.Valid(req.Payload) {
		return cairn.ValidationError{{Field: "payload", Message: "not valid JSON"}}
	}
	if len(req.Payload) > maxPayload {
		return cairn.ValidationError{{Field: "payload", Message: fmt.Sprintf("%d bytes, over the %d-byte limit of one payload", len(req.Payload), maxPayload)}}
	}
	return nil
}
