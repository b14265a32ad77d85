package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
)

// Conditions over events: a wait step's if (which also sees the run's
// input, state, steps and run) and a trigger's if (which sees the event
// only, its other variables empty). Both are compiled in an environment
// that adds the variable event = {name, id, payload} to the templates'
// one, so that no template can name it.

// Event is what a condition's event variable holds.
type Event struct {
	Name    string
	ID      string
	Payload json.RawMessage // JSON, or a payload reference Vars.Resolve reads
}

func (ev *Event) value() (any, error) {
	p, err := decodeJSON(ev.Payload)
	if err != nil {
		return nil, fmt.Errorf("event payload: %v", err)
	}
	return map[string]any{"name": ev.Name, "id": ev.ID, "payload": p}, nil
}

var (
	eventEnvOnce sync.Once
	eventEnvVal  *cel.Env
	eventEnvErr  error
)

func eventEnv() (*cel.Env, error) {
	eventEnvOnce.Do(func() {
		opts := append([]cel.EnvOption{cel.Variable("event", cel.MapType(cel.StringType, cel.DynType))}, variables...)
		eventEnvVal, eventEnvErr = cel.NewEnv(opts...)
	})
	return eventEnvVal, eventEnvErr
}

// Condition is a compiled boolean condition over an event.
type Condition struct {
	src string
	t   *Template
}

// CompileEventCondition compiles cond, a CEL expression bare or as
// ${expr}, in the events' environment, with limits (zero fields take the
// defaults).
func CompileEventCondition(cond string, limits Limits) (*Condition, error) {
	e, err := eventEnv()
	if err != nil {
		return nil, err
	}
	c := strings.TrimSpace(cond)
	if strings.HasPrefix(c, "${") && strings.HasSuffix(c, "}") {
		if end, err := Closing(c, 2); err == nil && end == len(c)-1 {
			c = strings.TrimSpace(c[2:end])
		}
	}
	raw, _ := json.Marshal("${" + c + "}")
	t, err := compileIn(e, raw, limits)
	if err != nil {
		return nil, err
	}
	return &Condition{src: cond, t: t}, nil
}

// Holds evaluates the condition on vars (whose Event is set): true or
// false, or an error when it fails or is not a bool.
func (c *Condition) Holds(vars Vars) (bool, error) {
	out, err := c.t.Render(vars)
	switch {
	case err != nil:
		return false, err
	case string(out) == "true":
		return true, nil
	case string(out) == "false":
		return false, nil
	}
	return false, fmt.Errorf("if %s evaluated to %s, not a bool", Clip(c.src), Clip(string(out)))
}

// Value evaluates the expression on vars (whose Event is set) and returns
// its value as JSON (a key, not a condition).
func (c *Condition) Value(vars Vars) (json.RawMessage, error) { return c.t.Render(vars) }
