package render

import (
	"encoding/json"
	"fmt"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/cairn-dev/cairn"
)

// Opaque checks the expressions of an encrypted workflow (cairn.Workflow
// Encrypted): its SDKs encrypt each top-level value of the run input and
// state (but the keys in Clear) and every step output, so the server sees
// those as opaque {"$cairn_encrypted":…} objects. An expression may pass
// such a value on whole — as the entire value of an input template
// string, "${input.k}", "${state.k}", "${steps.a.output}", or the
// containers holding them, "${input}", "${state}", "${steps}" — and may
// test its presence with has(); anything else (selecting or indexing
// inside it, comparing it, interpolating it into a string, a condition,
// an items expression or a flow-control key over it) is refused at
// registration, as the server could only compute it from ciphertext.
type Opaque struct {
	// Clear holds the input and state keys left in the clear.
	Clear map[string]bool
}

// CheckTemplate checks an input template.
func (o Opaque) CheckTemplate(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil // Compile reports it
	}
	return o.walkJSON(v)
}

func (o Opaque) walkJSON(v any) error {
	switch x := v.(type) {
	case string:
		return o.CheckString(x, true)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if err := o.walkJSON(x[k]); err != nil {
				return err
			}
		}
	case []any:
		for _, c := range x {
			if err := o.walkJSON(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckString checks a template string. whole says whether a string that
// is one expression renders to that expression's value (an input
// template) rather than to text (a flow-control key).
func (o Opaque) CheckString(s string, whole bool) error {
	exprs, err := expressions(s)
	if err != nil {
		return nil // Compile reports it
	}
	// As the renderer decides: one expression that is the whole string.
	trimmed := strings.TrimSpace(s)
	alone := false
	if len(exprs) == 1 && strings.HasPrefix(trimmed, "${") && strings.HasSuffix(trimmed, "}") {
		end, _ := Closing(trimmed, 2)
		alone = end == len(trimmed)-1
	}
	for _, src := range exprs {
		if err := o.CheckExpr(src, whole && alone); err != nil {
			return err
		}
	}
	return nil
}

// CheckCondition checks a bare or ${…} expression whose value the server
// computes with (a when condition, a map step's items).
func (o Opaque) CheckCondition(src string) error {
	src = strings.TrimSpace(src)
	if strings.HasPrefix(src, "${") && strings.HasSuffix(src, "}") {
		if end, err := Closing(src, 2); err == nil && end == len(src)-1 {
			src = src[2:end]
		}
	}
	return o.CheckExpr(src, false)
}

// CheckExpr checks one expression; whole says its value is passed on
// whole.
func (o Opaque) CheckExpr(src string, whole bool) error {
	e, err := env()
	if err != nil {
		return err
	}
	ast, iss := e.Parse(src)
	if iss != nil && iss.Err() != nil {
		return nil // Compile reports it
	}
	if bad := o.walk(ast.NativeRep().Expr(), whole); bad != "" {
		return fmt.Errorf("expression ${%s} %s; the workflow is encrypted, so the server cannot read inside its encrypted values: pass the value whole (as the entire template value, such as \"${steps.a.output}\" or \"${input.k}\"), or list the input or state key in clear", Clip(src), bad)
	}
	return nil
}

// level is what a path of selections from a variable names.
type level int

const (
	clearValue level = iota // not encrypted (run, item, index, a clear key, or inside one)
	container               // input, state, steps or steps.<id>: holds encrypted values
	encrypted               // one encrypted value
	inside                  // below an encrypted value
)

// path returns the variable and literal keys e selects, if it is such a
// chain (input.a.b, steps["x"].output).
func path(e celast.Expr) (root string, keys []string, ok bool) {
	switch e.Kind() {
	case celast.IdentKind:
		return e.AsIdent(), nil, true
	case celast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			return "", nil, false
		}
		r, k, ok := path(s.Operand())
		return r, append(k, s.FieldName()), ok
	case celast.CallKind:
		c := e.AsCall()
		if c.FunctionName() == operators.Index && len(c.Args()) == 2 {
			if lit := c.Args()[1]; lit.Kind() == celast.LiteralKind {
				if s, isStr := lit.AsLiteral().(types.String); isStr {
					r, k, ok := path(c.Args()[0])
					return r, append(k, string(s)), ok
				}
			}
		}
	}
	return "", nil, false
}

// classify says what a path names.
func (o Opaque) classify(root string, keys []string) level {
	var depth int // keys up to and including the encrypted value
	switch root {
	case "input", "state":
		if len(keys) > 0 && o.Clear[keys[0]] {
			return clearValue
		}
		depth = 1
	case "steps":
		if len(keys) > 1 && keys[1] != "output" {
			return clearValue // no such field: CEL says so at run time
		}
		depth = 2
	default:
		return clearValue
	}
	switch {
	case len(keys) < depth:
		return container
	case len(keys) == depth:
		return encrypted
	}
	return inside
}

// computed reports whether e is a variable holding encrypted values
// indexed by a key computed at run time (input[k], steps[x].output).
func (o Opaque) computed(e celast.Expr) bool {
	if e.Kind() != celast.CallKind {
		return false
	}
	c := e.AsCall()
	if c.FunctionName() != operators.Index || len(c.Args()) != 2 {
		return false
	}
	if r, k, ok := path(c.Args()[0]); ok && o.classify(r, k) == container {
		return true
	}
	return false
}

// walk returns why e reads inside an encrypted value ("" when it does
// not); whole says e's value is passed on whole.
func (o Opaque) walk(e celast.Expr, whole bool) string {
	if e == nil {
		return ""
	}
	if r, k, ok := path(e); ok {
		name := r
		if len(k) > 0 {
			name += "." + strings.Join(k, ".")
		}
		switch o.classify(r, k) {
		case inside:
			n := 1
			if r == "steps" {
				n = 2
			}
			enc := r + "." + strings.Join(k[:n], ".")
			return fmt.Sprintf("selects %s inside %s, which is encrypted", name, enc)
		case encrypted, container:
			if !whole {
				return fmt.Sprintf("computes with %s, which is or holds encrypted values", name)
			}
		}
		return ""
	}
	if o.computed(e) {
		return "indexes a value holding encrypted values with a computed key"
	}
	switch e.Kind() {
	case celast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() { // has(x.f): presence only
			if r, k, ok := path(s.Operand()); ok {
				if o.classify(r, k) == encrypted || o.classify(r, append(k, s.FieldName())) == inside {
					return fmt.Sprintf("tests a field inside %s, which is encrypted", r+"."+strings.Join(k, "."))
				}
				return ""
			}
		}
		return o.walk(s.Operand(), false)
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			if bad := o.walk(c.Target(), false); bad != "" {
				return bad
			}
		}
		for _, a := range c.Args() {
			if bad := o.walk(a, false); bad != "" {
				return bad
			}
		}
	case celast.ListKind:
		for _, x := range e.AsList().Elements() {
			if bad := o.walk(x, false); bad != "" {
				return bad
			}
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			m := en.AsMapEntry()
			if bad := o.walk(m.Key(), false); bad != "" {
				return bad
			}
			if bad := o.walk(m.Value(), false); bad != "" {
				return bad
			}
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if bad := o.walk(f.AsStructField().Value(), false); bad != "" {
				return bad
			}
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		for _, x := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			if bad := o.walk(x, false); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// CheckEncrypted refuses an encrypted workflow (cairn.Workflow.Encrypted)
// whose templates, conditions, items or flow-control keys read inside an
// encrypted value: the server only ever holds their ciphertext
// (Opaque). field names the definition in the error.
func CheckEncrypted(w cairn.Workflow, field string) error {
	if !w.Encrypted {
		return nil
	}
	o := Opaque{Clear: map[string]bool{}}
	for _, k := range w.Clear {
		o.Clear[k] = true
	}
	refuse := func(f string, err error) error {
		return cairn.ValidationError{{Field: field + f, Message: err.Error()}}
	}
	steps := func(list []cairn.Step, name string) error {
		for i, s := range list {
			f := fmt.Sprintf(".%s[%d]", name, i)
			if err := o.CheckTemplate(s.Input); err != nil {
				return refuse(f+".input", err)
			}
			if s.When != "" {
				if err := o.CheckCondition(s.When); err != nil {
					return refuse(f+".when", err)
				}
			}
			if s.Items != "" {
				if err := o.CheckCondition(s.Items); err != nil {
					return refuse(f+".items", err)
				}
			}
			if s.Concurrency != nil {
				if err := o.CheckString(s.Concurrency.Key, false); err != nil {
					return refuse(f+".concurrency.key", err)
				}
			}
			if s.RateLimit != nil {
				if err := o.CheckString(s.RateLimit.Key, false); err != nil {
					return refuse(f+".rate_limit.key", err)
				}
			}
		}
		return nil
	}
	if err := steps(w.Steps, "steps"); err != nil {
		return err
	}
	if err := steps(w.OnFailure, "on_failure"); err != nil {
		return err
	}
	for i, c := range w.Concurrency {
		if err := o.CheckString(c.Key, false); err != nil {
			return refuse(fmt.Sprintf(".concurrency[%d].key", i), err)
		}
	}
	return nil
}
