package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
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
func (t *template) resolveRefs(vars renderVars) (renderVars, error) {
	n := t.needs
	if n == nil {
		return vars, nil
	}
	res := func(what string, raw json.RawMessage) (json.RawMessage, error) {
		if !IsPayloadRef(raw) {
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
			if !IsPayloadRef(raw) || !all && !keys[k] {
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
	return vars, nil
}

// resolver is a render's Resolve: it reads the references of run, at
// most RenderResolveBytes in all. ctx nil: a render inside a run
// mutation, bounded by its own timeout.
func (e *Engine) resolver(ctx context.Context, run string) func(json.RawMessage) (json.RawMessage, error) {
	budget := newBudget(e.cfg.RenderResolveBytes)
	return func(raw json.RawMessage) (json.RawMessage, error) {
		c := ctx
		if c == nil {
			var cancel context.CancelFunc
			c, cancel = payloadCtx()
			defer cancel()
		}
		b, err := e.resolve(c, run, raw, budget)
		var (
			nf   *NotFoundError
			big  *PayloadTooLargeError
			corr *InternalError
		)
		if err != nil && !errors.As(err, &nf) && !errors.As(err, &big) && !errors.As(err, &corr) {
			err = &payloadReadError{err}
		}
		return b, err
	}
}

// payloadReadError: a payload could not be read for now (the store
// failed). A claim answers it as a store error instead of failing the
// step's render.
type payloadReadError struct{ err error }

func (e *payloadReadError) Error() string { return "reading a payload: " + e.err.Error() }
func (e *payloadReadError) Unwrap() error { return e.err }

// isPayloadReadError reports whether a render failed only because the
// store failed.
func isPayloadReadError(err error) bool {
	var p *payloadReadError
	return errors.As(err, &p)
}
