package render

import (
	"encoding/json"
	"fmt"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/cairn-dev/cairn"
)

// refNeeds is what a template's expressions read of the values that may
// be held by reference: found in their syntax trees at compile time, so a
// render resolves only the payloads its expressions name. Anything the
// analysis cannot pin down (steps or state used as a whole, indexed by a
// computed key) needs every value of that variable.
type refNeeds struct {
	input    bool
	allSteps bool
	allState bool
	steps    map[string]bool
	state    map[string]bool
}

func newRefNeeds() *refNeeds {
	return &refNeeds{steps: map[string]bool{}, state: map[string]bool{}}
}

// add records what expression e reads.
func (n *refNeeds) add(e celast.Expr) {
	if e == nil {
		return
	}
	switch e.Kind() {
	case celast.IdentKind:
		switch e.AsIdent() {
		case "input":
			n.input = true
		case "steps":
			n.allSteps = true
		case "state":
			n.allState = true
		}
	case celast.SelectKind:
		s := e.AsSelect()
		if n.member(s.Operand(), s.FieldName()) {
			return
		}
		n.add(s.Operand())
	case celast.CallKind:
		c := e.AsCall()
		if c.FunctionName() == operators.Index && len(c.Args()) == 2 {
			if k := c.Args()[1]; k.Kind() == celast.LiteralKind {
				if s, ok := k.AsLiteral().(types.String); ok && n.member(c.Args()[0], string(s)) {
					return
				}
			}
		}
		if c.IsMemberFunction() {
			n.add(c.Target())
		}
		for _, a := range c.Args() {
			n.add(a)
		}
	case celast.ListKind:
		for _, x := range e.AsList().Elements() {
			n.add(x)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			m := en.AsMapEntry()
			n.add(m.Key())
			n.add(m.Value())
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			n.add(f.AsStructField().Value())
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		n.add(c.IterRange())
		n.add(c.AccuInit())
		n.add(c.LoopCondition())
		n.add(c.LoopStep())
		n.add(c.Result())
	}
}

// member records steps.<key> or state.<key> and reports whether operand
// was one of those variables.
func (n *refNeeds) member(operand celast.Expr, key string) bool {
	if operand.Kind() != celast.IdentKind {
		return false
	}
	switch operand.AsIdent() {
	case "steps":
		n.steps[key] = true
		return true
	case "state":
		n.state[key] = true
		return true
	}
	return false
}

// resolveRefs returns vars with the references the template reads
// replaced by their values, through vars.Resolve. References it does not
// read are left as they are (their expressions never see them).
func (t *Template) resolveRefs(vars Vars) (Vars, error) {
	n := t.needs
	if n == nil {
		return vars, nil
	}
	res := func(what string, raw json.RawMessage) (json.RawMessage, error) {
		if !cairn.IsPayloadRefJSON(raw) {
			return raw, nil
		}
		if vars.Resolve == nil {
			return nil, fmt.Errorf("%s is stored by reference and cannot be read here", what)
		}
		b, err := vars.Resolve(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return b, nil
	}
	var err error
	if n.input {
		if vars.Input, err = res("run input", vars.Input); err != nil {
			return vars, err
		}
	}
	copyResolved := func(m map[string]json.RawMessage, all bool, keys map[string]bool, what string) (map[string]json.RawMessage, error) {
		var out map[string]json.RawMessage
		for k, raw := range m {
			if !cairn.IsPayloadRefJSON(raw) || !all && !keys[k] {
				continue
			}
			b, err := res(fmt.Sprintf(what, k), raw)
			if err != nil {
				return nil, err
			}
			if out == nil { // copy on first write: the record's map stays as it was
				out = make(map[string]json.RawMessage, len(m))
				for k2, v := range m {
					out[k2] = v
				}
			}
			out[k] = b
		}
		if out == nil {
			return m, nil
		}
		return out, nil
	}
	if vars.Steps, err = copyResolved(vars.Steps, n.allSteps, n.steps, "steps.%s.output"); err != nil {
		return vars, err
	}
	if vars.State, err = copyResolved(vars.State, n.allState, n.state, "state.%s"); err != nil {
		return vars, err
	}
	if ev := vars.Event; ev != nil && cairn.IsPayloadRefJSON(ev.Payload) { // a condition over an event reads it
		c := *ev
		if c.Payload, err = res("event.payload", ev.Payload); err != nil {
			return vars, err
		}
		vars.Event = &c
	}
	return vars, nil
}
