// Package flow is the mechanism of flow control at claim time: a
// definition's compiled options (Plan), the concurrency limits' slot
// objects (Table) and the rate limits' GCRA state objects (TakeRate).
// The engine decides when to apply them (docs/ARCHITECTURE.md, "Flow
// control"); a slot's attempt being over is its decision too (Table.Stale).
package flow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// Plan is a definition's compiled flow-control options.
type Plan struct {
	Steps     map[string]*Step // by step id; nil entry: none
	Singleton *SingletonPlan   // nil: none
}

// Step is one step's flow control.
type Step struct {
	Limits   []Limit
	Rate     *Rate
	Priority *int
}

// Limit is one concurrency limit of a step.
type Limit struct {
	Scope string           // what the key is counted within
	Field string           // the option's field path, for errors
	Key   *render.Template // nil: no key (one limit for the scope)
	Limit int
}

// Rate is a step's rate limit.
type Rate struct {
	Scope  string
	Field  string
	Key    *render.Template
	Limit  int
	Period time.Duration
	Burst  int
}

// Takes reports whether steps of kind k take flow control's options (the
// root's table of kind options: task steps).
func Takes(k cairn.StepKind) bool {
	return k.Takes("concurrency") == nil || k.Takes("rate_limit") == nil || k.Takes("priority") == nil
}

// Compile compiles the key templates of a workflow's flow options; field
// names the workflow in errors.
func Compile(w cairn.Workflow, field string) (*Plan, error) {
	p := &Plan{Steps: map[string]*Step{}}
	keyTemplate := func(k, f string) (*render.Template, error) {
		if k == "" {
			return nil, nil
		}
		raw, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		t, err := render.Compile(raw)
		if err != nil {
			return nil, cairn.ValidationError{{Field: f, Message: err.Error()}}
		}
		return t, nil
	}
	if s := w.Singleton; s != nil {
		t, err := keyTemplate(s.Key, field+".singleton.key")
		if err != nil {
			return nil, err
		}
		p.Singleton = &SingletonPlan{Key: t, Mode: s.Mode}
	}
	var wf []Limit
	for i, c := range w.Concurrency {
		f := fmt.Sprintf("%s.concurrency[%d]", field, i)
		t, err := keyTemplate(c.Key, f+".key")
		if err != nil {
			return nil, err
		}
		wf = append(wf, Limit{Scope: fmt.Sprintf("workflow\x00%s\x00%d", w.Name, i), Field: fmt.Sprintf("concurrency[%d].key", i), Key: t, Limit: c.Limit})
	}
	for i, s := range w.Steps {
		if !Takes(s.EffectiveKind()) {
			continue
		}
		sf := &Step{Priority: s.Priority}
		f := fmt.Sprintf("%s.steps[%d]", field, i)
		if c := s.Concurrency; c != nil {
			t, err := keyTemplate(c.Key, f+".concurrency.key")
			if err != nil {
				return nil, err
			}
			sf.Limits = append(sf.Limits, Limit{Scope: "step\x00" + w.Name + "\x00" + s.ID, Field: "concurrency.key", Key: t, Limit: c.Limit})
		}
		sf.Limits = append(sf.Limits, wf...)
		if rl := s.RateLimit; rl != nil {
			t, err := keyTemplate(rl.Key, f+".rate_limit.key")
			if err != nil {
				return nil, err
			}
			sf.Rate = &Rate{Scope: "step\x00" + w.Name + "\x00" + s.ID, Field: "rate_limit.key", Key: t, Limit: rl.Limit, Period: rl.Period.D(), Burst: max(rl.Burst, 1)}
		}
		if len(sf.Limits) > 0 || sf.Rate != nil || sf.Priority != nil {
			p.Steps[s.ID] = sf
		}
	}
	return p, nil
}

// RenderKey renders a key template to a string: a string value as is,
// anything else as its JSON text. A nil template is the empty key.
func RenderKey(t *render.Template, vars render.Vars) (string, error) {
	if t == nil {
		return "", nil
	}
	raw, err := t.Render(vars)
	if err != nil {
		return "", err
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	if len(s) > 1024 {
		return "", fmt.Errorf("rendered key is %d bytes, over the 1024-byte limit", len(s))
	}
	return s, nil
}

// clipKey is a rendered key as its object records it (for people).
func clipKey(k string) string {
	if len(k) > 256 {
		return k[:256] + "…"
	}
	return k
}
