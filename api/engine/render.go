package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Templates are JSON values whose strings may hold CEL expressions between
// "${" and "}". A string that is one expression and nothing else takes the
// expression's value, of any JSON type; a string with text around its
// expressions is interpolated. Expressions see:
//
//	input   the run's input
//	state   the run state (an object)
//	steps   earlier steps by id: steps.<id>.output
//	run     {id, workflow, version, correlation}
//
// JSON numbers without a fraction are CEL ints, others doubles.

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

func env() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnv, celEnvErr = cel.NewEnv(
			cel.Variable("input", cel.DynType),
			cel.Variable("state", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("run", cel.MapType(cel.StringType, cel.DynType)),
		)
	})
	return celEnv, celEnvErr
}

// template is a compiled input template.
type template struct {
	raw   json.RawMessage
	progs map[string]cel.Program // by expression source
}

// compileTemplate parses a template and compiles every expression in it,
// so a definition with a bad expression is refused at registration.
func compileTemplate(raw json.RawMessage) (*template, error) {
	t := &template{raw: raw, progs: map[string]cel.Program{}}
	if len(raw) == 0 {
		return t, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("template is not valid JSON: %v", err)
	}
	e, err := env()
	if err != nil {
		return nil, err
	}
	var walk func(any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case string:
			exprs, err := expressions(x)
			if err != nil {
				return err
			}
			for _, src := range exprs {
				if _, ok := t.progs[src]; ok {
					continue
				}
				ast, iss := e.Compile(src)
				if iss != nil && iss.Err() != nil {
					return fmt.Errorf("expression ${%s}: %v", src, iss.Err())
				}
				prg, err := e.Program(ast)
				if err != nil {
					return fmt.Errorf("expression ${%s}: %v", src, err)
				}
				t.progs[src] = prg
			}
		case map[string]any:
			for _, c := range x {
				if err := walk(c); err != nil {
					return err
				}
			}
		case []any:
			for _, c := range x {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return nil, err
	}
	return t, nil
}

// expressions returns the sources of the ${…} expressions in s. Braces
// nest, so map literals work inside; "$${" escapes a literal "${".
func expressions(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "$${") {
			i += 2
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			continue
		}
		end, err := closing(s, i+2)
		if err != nil {
			return nil, err
		}
		src := strings.TrimSpace(s[i+2 : end])
		if src == "" {
			return nil, fmt.Errorf("empty expression ${} in %q", s)
		}
		out = append(out, src)
		i = end
	}
	return out, nil
}

// closing finds the "}" that closes an expression starting at from,
// skipping braces inside CEL string literals.
func closing(s string, from int) (int, error) {
	depth := 0
	var quote byte
	for j := from; j < len(s); j++ {
		c := s[j]
		switch {
		case quote != 0:
			if c == '\\' {
				j++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		}
	}
	return 0, fmt.Errorf("unclosed ${ in %q", s)
}

// renderVars are the values expressions see.
type renderVars struct {
	Input       json.RawMessage
	State       map[string]json.RawMessage
	Steps       map[string]json.RawMessage // outputs by step id
	RunID       string
	Workflow    string
	Version     string
	Correlation string
}

func (v renderVars) activation() (map[string]any, error) {
	input, err := decodeJSON(v.Input)
	if err != nil {
		return nil, fmt.Errorf("run input: %v", err)
	}
	state := map[string]any{}
	for k, raw := range v.State {
		if state[k], err = decodeJSON(raw); err != nil {
			return nil, fmt.Errorf("state.%s: %v", k, err)
		}
	}
	steps := map[string]any{}
	for k, raw := range v.Steps {
		out, err := decodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("steps.%s.output: %v", k, err)
		}
		steps[k] = map[string]any{"output": out}
	}
	return map[string]any{
		"input": input,
		"state": state,
		"steps": steps,
		"run": map[string]any{
			"id": v.RunID, "workflow": v.Workflow, "version": v.Version, "correlation": v.Correlation,
		},
	}, nil
}

// decodeJSON decodes JSON for CEL: integral numbers become int64.
func decodeJSON(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, c := range x {
			x[k] = numbers(c)
		}
	case []any:
		for i, c := range x {
			x[i] = numbers(c)
		}
	}
	return v
}

// render evaluates the template. An empty template renders as the run's
// input, unchanged.
func (t *template) render(vars renderVars) (json.RawMessage, error) {
	if len(t.raw) == 0 {
		if len(vars.Input) == 0 {
			return json.RawMessage("null"), nil
		}
		return vars.Input, nil
	}
	act, err := vars.activation()
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(t.raw, &v); err != nil {
		return nil, err
	}
	out, err := t.eval(v, act)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("rendered value is not JSON: %v", err)
	}
	return b, nil
}

func (t *template) eval(v any, act map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		exprs, err := expressions(x)
		if err != nil || len(exprs) == 0 {
			return strings.ReplaceAll(x, "$${", "${"), err
		}
		trimmed := strings.TrimSpace(x)
		if len(exprs) == 1 && strings.HasPrefix(trimmed, "${") && strings.HasSuffix(trimmed, "}") {
			if end, _ := closing(trimmed, 2); end == len(trimmed)-1 {
				return t.evalExpr(exprs[0], act)
			}
		}
		// Interpolate: each expression's value as text.
		var b strings.Builder
		for i := 0; i < len(x); i++ {
			if strings.HasPrefix(x[i:], "$${") {
				b.WriteString("${")
				i += 2
				continue
			}
			if !strings.HasPrefix(x[i:], "${") {
				b.WriteByte(x[i])
				continue
			}
			end, _ := closing(x, i+2)
			val, err := t.evalExpr(strings.TrimSpace(x[i+2:end]), act)
			if err != nil {
				return nil, err
			}
			if s, ok := val.(string); ok {
				b.WriteString(s)
			} else {
				j, _ := json.Marshal(val)
				b.Write(j)
			}
			i = end
		}
		return b.String(), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			r, err := t.eval(c, act)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			r, err := t.eval(c, act)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

var structpbValue = reflect.TypeOf(&structpb.Value{})

func (t *template) evalExpr(src string, act map[string]any) (any, error) {
	prg, ok := t.progs[src]
	if !ok {
		return nil, fmt.Errorf("expression ${%s} was not compiled", src)
	}
	val, _, err := prg.Eval(act)
	if err != nil {
		return nil, fmt.Errorf("${%s}: %v", src, err)
	}
	if types.IsError(val) {
		return nil, fmt.Errorf("${%s}: %v", src, val)
	}
	native, err := val.ConvertToNative(structpbValue)
	if err != nil {
		return nil, fmt.Errorf("${%s}: result of type %s is not JSON: %v", src, val.Type().TypeName(), err)
	}
	b, err := protojson.Marshal(native.(*structpb.Value))
	if err != nil {
		return nil, fmt.Errorf("${%s}: %v", src, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	// protojson writes every number as a double; keep integers integral.
	if f, ok := out.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), nil
	}
	return out, nil
}
