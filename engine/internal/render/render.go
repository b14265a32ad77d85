// Package render compiles and renders the engine's input templates: JSON
// values whose strings hold CEL expressions, evaluated under a metered
// cost budget and a byte cap, resolving only the values stored by
// reference that their expressions read.
package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
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
//
// Rendering is bounded, because every claim of a step renders its template
// again: each expression runs under a CEL cost limit, the costs of one
// render's expressions add up under a second limit, and the rendered input
// has a byte cap that is enforced while values are encoded, not after. A
// template over a bound fails the step with class render_error, and the
// error names the limit. See Limits.

// Limits bound one render of a template.
type Limits struct {
	// ExprCost caps the CEL cost of one expression's evaluation.
	ExprCost uint64
	// TemplateCost caps the CEL cost of one render: the sum over the
	// template's expressions (an expression that occurs twice counts
	// twice).
	TemplateCost uint64
	// MaxBytes caps the rendered input, as JSON.
	MaxBytes int
}

// Default render limits. Costs are in the meter's units (see meter),
// which follow cel's cost model: about one per node evaluated (a variable,
// a field, a call, a comprehension step), ten to make a list and thirty a
// map, plus what a call reads or makes by size (a tenth per string byte,
// one or more per list or map element). Measured on a 2-core machine, a
// unit is 30 to 140 ns, so 1e6 is roughly 30 to 150 ms of CPU per render;
// and because strings and lists are paid for by size, a render allocates
// tens of megabytes at most, mostly short-lived. (The nested map over
// 1,500 ints, unbounded 3 s and 846 MB, is refused after 35 to 110 ms,
// load depending, and 11 MB.) Ordinary templates cost hundreds of units;
// a map over 1,000 items 17,000 (ints) to 55,000 (an object per item).
// 1e6 is also what Kubernetes allows one CEL expression. The
// per-expression limit defaults to the whole budget: one heavy expression
// is a normal template, many is not, and it is the sum that a claim pays.
//
// 1 MiB is MaxOutputBytes: a rendered input is a worker's payload, the
// same kind of thing as a step output, and bulk data belongs in the bucket
// by reference (a lease carries the ancestors' outputs and state besides).
const (
	DefaultExprCostLimit     = 1_000_000
	DefaultTemplateCostLimit = 1_000_000
	DefaultMaxRenderedBytes  = 1 << 20
)

// defaultLimits are the limits Compile gives a template.
var defaultLimits = Limits{
	ExprCost:     DefaultExprCostLimit,
	TemplateCost: DefaultTemplateCostLimit,
	MaxBytes:     DefaultMaxRenderedBytes,
}

func (l Limits) withDefaults() Limits {
	if l.ExprCost == 0 {
		l.ExprCost = DefaultExprCostLimit
	}
	if l.TemplateCost == 0 {
		l.TemplateCost = DefaultTemplateCostLimit
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxRenderedBytes
	}
	return l
}

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

func env() (*cel.Env, error) {
	celEnvOnce.Do(func() { celEnv, celEnvErr = cel.NewEnv(variables...) })
	return celEnv, celEnvErr
}

// variables are what templates see.
var variables = []cel.EnvOption{
	cel.Variable("input", cel.DynType),
	cel.Variable("state", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("run", cel.MapType(cel.StringType, cel.DynType)),
	// A map item's element and index (null and 0 elsewhere).
	cel.Variable("item", cel.DynType),
	cel.Variable("index", cel.IntType),
	// The visit the step is on: 1, plus one per loop back over it.
	cel.Variable("visit", cel.IntType),
}

// Template is a compiled input template.
type Template struct {
	env    *cel.Env // its expressions' environment (env, or eventEnv)
	raw    json.RawMessage
	limits Limits
	progs  map[string]*program // by expression source
	needs  *refNeeds           // what the expressions read (refs.go)
}

// program is one compiled expression and its idle planned instances.
type program struct {
	env  *cel.Env
	ast  *cel.Ast
	mu   sync.Mutex
	idle []*instance
}

// Compile parses a template and compiles every expression in it,
// so a definition with a bad expression is refused at registration. It
// gives the template the default render limits.
func Compile(raw json.RawMessage) (*Template, error) {
	return CompileWith(raw, defaultLimits)
}

// CompileWith is Compile with explicit limits (zero fields
// take the defaults).
func CompileWith(raw json.RawMessage, limits Limits) (*Template, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	return compileIn(e, raw, limits)
}

// compileIn is CompileWith in environment e.
func compileIn(e *cel.Env, raw json.RawMessage, limits Limits) (*Template, error) {
	limits = limits.withDefaults()
	t := &Template{env: e, raw: raw, limits: limits, progs: map[string]*program{}, needs: newRefNeeds()}
	if len(raw) == 0 {
		return t, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("template is not valid JSON: %v", err)
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
				p := &program{env: e, ast: ast}
				in, err := p.plan()
				if err != nil {
					return fmt.Errorf("expression ${%s}: %v", src, err)
				}
				p.release(in)
				t.progs[src] = p
				t.needs.add(ast.NativeRep().Expr())
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				if err := walk(x[k]); err != nil {
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

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// Clip shortens an expression for an error message.
func Clip(src string) string {
	const n = 80
	if len(src) <= n {
		return src
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(src[cut]) {
		cut--
	}
	return src[:cut] + "…"
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
		end, err := Closing(s, i+2)
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

// Closing finds the "}" that closes an expression starting at from,
// skipping braces inside CEL string literals.
func Closing(s string, from int) (int, error) {
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

// Vars are the values expressions see.
type Vars struct {
	Input json.RawMessage
	State map[string]json.RawMessage
	Steps map[string]json.RawMessage // outputs by step id
	// Visits are the steps' visits (steps.<id>.visits: 1, plus one per
	// loop back over the step), for the steps in Steps; Visit is the
	// rendering step's own (visit).
	Visits      map[string]int
	Visit       int
	RunID       string
	Workflow    string
	Version     string
	Correlation string
	// Resolve returns the value a payload reference names (nil: values
	// by reference cannot be read, and a render that needs one fails).
	Resolve func(json.RawMessage) (json.RawMessage, error)
	// Item and Index are a map item's element and index (HasItem set).
	Item    json.RawMessage
	Index   int
	HasItem bool
	// Event is the event a condition of an event's environment sees
	// (event.go).
	Event *Event
}

func (v Vars) activation() (map[string]any, error) {
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
		steps[k] = map[string]any{"output": out, "visits": int64(max(v.Visits[k], 1))}
	}
	var item any
	if v.HasItem {
		if item, err = decodeJSON(v.Item); err != nil {
			return nil, fmt.Errorf("item: %v", err)
		}
	}
	act := map[string]any{
		"item":  item,
		"index": int64(v.Index),
		"visit": int64(max(v.Visit, 1)),
		"input": input,
		"state": state,
		"steps": steps,
		"run": map[string]any{
			"id": v.RunID, "workflow": v.Workflow, "version": v.Version, "correlation": v.Correlation,
		},
	}
	if v.Event != nil {
		if act["event"], err = v.Event.value(); err != nil {
			return nil, err
		}
	}
	return act, nil
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

// Render evaluates the template. An empty template renders as the run's
// input, unchanged (its size was bounded when the run was started).
func (t *Template) Render(vars Vars) (json.RawMessage, error) {
	if len(t.raw) == 0 {
		if len(vars.Input) == 0 {
			return json.RawMessage("null"), nil
		}
		return vars.Input, nil
	}
	vars, err := t.resolveRefs(vars)
	if err != nil {
		return nil, err
	}
	act, err := vars.activation()
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(t.raw, &v); err != nil {
		return nil, err
	}
	r := &renderer{t: t, act: act}
	out, err := r.eval(v)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("rendered value is not JSON: %v", err)
	}
	if len(b) > t.limits.MaxBytes {
		return nil, fmt.Errorf("rendered input is %d bytes, over the %d-byte limit", len(b), t.limits.MaxBytes)
	}
	return b, nil
}

// renderer is the state of one render: what its expressions have spent.
type renderer struct {
	t     *Template
	act   map[string]any
	cost  uint64 // CEL cost so far
	bytes int    // bytes the expressions' values have rendered as so far
}

func (r *renderer) eval(v any) (any, error) {
	switch x := v.(type) {
	case string:
		exprs, err := expressions(x)
		if err != nil || len(exprs) == 0 {
			return strings.ReplaceAll(x, "$${", "${"), err
		}
		trimmed := strings.TrimSpace(x)
		if len(exprs) == 1 && strings.HasPrefix(trimmed, "${") && strings.HasSuffix(trimmed, "}") {
			if end, _ := Closing(trimmed, 2); end == len(trimmed)-1 {
				val, err := r.evalExpr(exprs[0])
				if err != nil {
					return nil, err
				}
				return r.encode(exprs[0], val, true)
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
			end, _ := Closing(x, i+2)
			src := strings.TrimSpace(x[i+2 : end])
			val, err := r.evalExpr(src)
			if err != nil {
				return nil, err
			}
			if s, ok := val.(types.String); ok {
				if len(s) > r.t.limits.MaxBytes-r.bytes {
					return nil, r.tooBig(src)
				}
				r.bytes += len(s)
				b.WriteString(string(s))
			} else {
				j, err := r.encode(src, val, true)
				if err != nil {
					return nil, err
				}
				b.Write(j)
			}
			i = end
		}
		return b.String(), nil
	case map[string]any:
		// In key order, so that which expression meets a limit first, and
		// so the error, is the same on every claim.
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			v, err := r.eval(x[k])
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			v, err := r.eval(c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return v, nil
}

// evalExpr runs one expression under what is left of the render's cost
// budget.
func (r *renderer) evalExpr(src string) (ref.Val, error) {
	p, ok := r.t.progs[src]
	if !ok {
		return nil, fmt.Errorf("expression ${%s} was not compiled", src)
	}
	lim := r.t.limits
	var limit uint64 // what this expression may spend
	if r.cost < lim.TemplateCost {
		limit = min(lim.ExprCost, lim.TemplateCost-r.cost)
	}
	in, err := p.acquire()
	if err != nil {
		return nil, fmt.Errorf("${%s}: %v", src, err)
	}
	in.m = meter{limit: limit}
	val, _, err := in.prg.Eval(r.act)
	spent, exceeded := in.m.spent, in.m.exceeded
	p.release(in)
	r.cost = satAdd(r.cost, spent)
	if exceeded {
		if limit == lim.ExprCost {
			return nil, fmt.Errorf("expression ${%s} exceeds the CEL cost limit of %d per expression", Clip(src), lim.ExprCost)
		}
		return nil, fmt.Errorf("template exceeds the CEL cost limit of %d per render (the sum over its expressions) at ${%s}", lim.TemplateCost, Clip(src))
	}
	if err != nil {
		return nil, fmt.Errorf("${%s}: %v", src, err)
	}
	if types.IsError(val) {
		return nil, fmt.Errorf("${%s}: %v", src, val)
	}
	return val, nil
}

// encode writes an expression's value as JSON within what is left of the
// byte budget.
func (r *renderer) encode(src string, val ref.Val, top bool) (json.RawMessage, error) {
	w := jsonWriter{max: r.t.limits.MaxBytes - r.bytes}
	if err := w.value(val, top); err != nil {
		if errors.Is(err, errTooBig) {
			return nil, r.tooBig(src)
		}
		return nil, fmt.Errorf("${%s}: result of type %s is not JSON: %v", src, val.Type().TypeName(), err)
	}
	r.bytes += len(w.buf)
	return w.buf, nil
}

func (r *renderer) tooBig(src string) error {
	return fmt.Errorf("rendered input is over the %d-byte limit at ${%s}", r.t.limits.MaxBytes, Clip(src))
}

// errTooBig stops an encoding that would pass its byte budget.
var errTooBig = errors.New("over the byte budget")

// jsonWriter encodes CEL values as JSON, as encoding/json would encode
// their JSON form (sorted object keys, HTML-safe strings), giving up as
// soon as the output passes max bytes. The budget is checked before each
// value and before each container is entered, so values that share
// structure (a list of the same big list twice, nested) cost the encoder
// no more than max bytes of work. Integers outside ±(2^53-1) are strings,
// as in cel's own JSON conversion.
type jsonWriter struct {
	buf []byte
	max int
}

const maxJSONSafe = 1<<53 - 1

func (w *jsonWriter) value(v ref.Val, top bool) error {
	left := w.max - len(w.buf)
	if left <= 0 {
		return errTooBig
	}
	switch x := v.(type) {
	case types.Null:
		w.buf = append(w.buf, "null"...)
	case types.Bool:
		w.buf = strconv.AppendBool(w.buf, bool(x))
	case types.Int:
		if x < -maxJSONSafe || x > maxJSONSafe {
			w.buf = append(w.buf, '"')
			w.buf = strconv.AppendInt(w.buf, int64(x), 10)
			w.buf = append(w.buf, '"')
		} else {
			w.buf = strconv.AppendInt(w.buf, int64(x), 10)
		}
	case types.Uint:
		if x > maxJSONSafe {
			w.buf = append(w.buf, '"')
			w.buf = strconv.AppendUint(w.buf, uint64(x), 10)
			w.buf = append(w.buf, '"')
		} else {
			w.buf = strconv.AppendUint(w.buf, uint64(x), 10)
		}
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%v is not a JSON number", f)
		}
		if top && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			// An integral double on its own is an integer.
			w.buf = strconv.AppendInt(w.buf, int64(f), 10)
		} else {
			w.buf = appendFloat(w.buf, f)
		}
	case types.String:
		if len(x)+2 > left {
			return errTooBig
		}
		w.buf = appendString(w.buf, string(x))
	default:
		switch v.Type() {
		case types.ListType:
			return w.list(v.(traits.Lister))
		case types.MapType:
			return w.object(v.(traits.Mapper))
		}
		// Bytes, durations, timestamps: cel's JSON form.
		native, err := v.ConvertToNative(types.JSONValueType)
		if err != nil {
			return err
		}
		jv := native.(*structpb.Value)
		if s, ok := jv.Kind.(*structpb.Value_StringValue); ok {
			if len(s.StringValue)+2 > left {
				return errTooBig
			}
			w.buf = appendString(w.buf, s.StringValue)
			break
		}
		b, err := protojson.Marshal(jv)
		if err != nil {
			return err
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return err
		}
		w.buf = append(w.buf, c.Bytes()...)
	}
	if len(w.buf) > w.max {
		return errTooBig
	}
	return nil
}

func (w *jsonWriter) list(l traits.Lister) error {
	n, _ := l.Size().(types.Int)
	// Each element takes at least two bytes, a value and a comma.
	if int64(n) > int64(w.max-len(w.buf))/2 {
		return errTooBig
	}
	w.buf = append(w.buf, '[')
	first := true
	for it := l.Iterator(); it.HasNext() == types.True; {
		if !first {
			w.buf = append(w.buf, ',')
		}
		first = false
		if err := w.value(it.Next(), false); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, ']')
	return nil
}

func (w *jsonWriter) object(m traits.Mapper) error {
	n, _ := m.Size().(types.Int)
	// Each member takes at least five bytes: "":0,
	if int64(n) > int64(w.max-len(w.buf))/5 {
		return errTooBig
	}
	keys := make([]string, 0, int(n))
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		s, ok := k.(types.String)
		if !ok {
			return fmt.Errorf("map key %v of type %s is not a string", k, k.Type().TypeName())
		}
		keys = append(keys, string(s))
	}
	sort.Strings(keys)
	w.buf = append(w.buf, '{')
	for i, k := range keys {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if len(k)+3 > w.max-len(w.buf) {
			return errTooBig
		}
		w.buf = appendString(w.buf, k)
		w.buf = append(w.buf, ':')
		if err := w.value(m.Get(types.String(k)), false); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// appendFloat formats a finite float as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString quotes s as encoding/json does, HTML-safe: the rendered
// input is re-marshalled with encoding/json, which keeps these escapes.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// The meter. cel-go's own runtime cost tracking (cel.CostLimit) does not
// bound a render here: its bookkeeping is quadratic in a comprehension's
// length (a map over 60,000 ints, under the limit, took 6 s), and with
// dynamic variables it charges string and list concatenation one unit
// whatever the sizes (a 64 MiB string for a cost of 587; a list of 3e15
// elements, by lazy concatenation, for 1,315). So templates are metered by
// a decorator instead: every planned node is wrapped, charges one unit per
// evaluation (each comprehension step runs at least two), and a call also
// charges for the sizes of what it read and made, after it returns. A call
// reads and makes only values that earlier charges paid for, or the run's
// own (bounded) data, so the overshoot past the limit is at most one
// call's work. Over the limit, the meter panics with cel's own
// cancellation error, which Eval recovers and returns.
//
// A planned program holds the meter its nodes charge, so one instance
// serves one evaluation at a time; program keeps a few idle ones.

// meter is the budget of one evaluation.
type meter struct {
	limit    uint64
	spent    uint64
	exceeded bool
}

func (m *meter) charge(n uint64) {
	m.spent = satAdd(m.spent, n)
	if m.spent > m.limit {
		m.exceeded = true
		panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: "template cost limit exceeded"})
	}
}

// left is what may still be charged.
func (m *meter) left() uint64 {
	if m.spent >= m.limit {
		return 0
	}
	return m.limit - m.spent
}

// instance is one planned, metered program.
type instance struct {
	prg  cel.Program
	m    meter
	args []*watch // nodes whose values a call reads
}

const maxIdleInstances = 8

func (p *program) plan() (*instance, error) {
	in := &instance{}
	var err error
	if in.prg, err = p.env.Program(p.ast, cel.CustomDecoratorV2(in.decorate)); err != nil {
		return nil, err
	}
	return in, nil
}

func (p *program) acquire() (*instance, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		in := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return in, nil
	}
	p.mu.Unlock()
	return p.plan()
}

func (p *program) release(in *instance) {
	for _, w := range in.args {
		w.last = nil // hold no values between renders
	}
	p.mu.Lock()
	if len(p.idle) < maxIdleInstances {
		p.idle = append(p.idle, in)
	}
	p.mu.Unlock()
}

// watch is what every metered node has: the meter, and for a call's
// arguments, the value of their last evaluation.
type watch struct {
	m    *meter
	keep bool
	last ref.Val
}

func (w *watch) observe(v ref.Val) ref.Val {
	if w.keep {
		w.last = v
	}
	return v
}

// execer is a planned node of any kind.
type execer interface {
	Exec(*interpreter.ExecutionFrame) ref.Val
}

// exec is a plain node's metered evaluation: one unit, then e's value,
// observed.
func (w *watch) exec(e execer, f *interpreter.ExecutionFrame) ref.Val {
	w.m.charge(1)
	return w.observe(e.Exec(f))
}

// watched is a metered node.
type watched interface{ watched() *watch }

func (w *watch) watched() *watch { return w }

// decorate wraps each planned node in a metered one of the same kind, so
// the planner's later use of it (as an attribute to qualify, a constant, a
// call's argument) works unchanged.
func (in *instance) decorate(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	if _, ok := i.(watched); ok {
		return i, nil
	}
	w := watch{m: &in.m}
	switch n := i.(type) {
	case interpreter.InterpretableAttribute:
		return &meteredAttr{InterpretableAttribute: n, watch: w}, nil
	case interpreter.InterpretableConst:
		return &meteredConst{InterpretableConst: n, watch: w}, nil
	case interpreter.InterpretableCall:
		c := &meteredCall{InterpretableCall: n, watch: w}
		for _, a := range n.Args() {
			var aw *watch
			if x, ok := a.(watched); ok {
				aw = x.watched()
				aw.keep = true
				in.args = append(in.args, aw)
			}
			c.args = append(c.args, aw)
		}
		return c, nil
	case interpreter.InterpretableConstructor:
		return &meteredConstructor{InterpretableConstructor: n, watch: w}, nil
	default:
		return &meteredNode{InterpretableV2: n, watch: w}, nil
	}
}

type meteredNode struct {
	interpreter.InterpretableV2
	watch
}

func (n *meteredNode) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return n.exec(n.InterpretableV2, f)
}

func (n *meteredNode) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

type meteredAttr struct {
	interpreter.InterpretableAttribute
	watch
}

func (n *meteredAttr) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return n.exec(n.InterpretableAttribute, f)
}

func (n *meteredAttr) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

type meteredConst struct {
	interpreter.InterpretableConst
	watch
}

func (n *meteredConst) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return n.exec(n.InterpretableConst, f)
}

func (n *meteredConst) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

type meteredConstructor struct {
	interpreter.InterpretableConstructor
	watch
}

func (n *meteredConstructor) Exec(f *interpreter.ExecutionFrame) ref.Val {
	// cel's base costs of making a list or a map: allocation is most of
	// what a comprehension step costs.
	if n.Type() == types.MapType {
		n.m.charge(common.MapCreateBaseCost)
	} else {
		n.m.charge(common.ListCreateBaseCost)
	}
	return n.observe(n.InterpretableConstructor.Exec(f))
}

func (n *meteredConstructor) Eval(a interpreter.Activation) ref.Val {
	return n.Exec(interpreter.AsFrame(a))
}

type meteredCall struct {
	interpreter.InterpretableCall
	watch
	args []*watch // nil where an argument is not metered
}

func (n *meteredCall) Exec(f *interpreter.ExecutionFrame) ref.Val {
	n.m.charge(1)
	v := n.InterpretableCall.Exec(f)
	n.m.charge(n.cost(v))
	return n.observe(v)
}

func (n *meteredCall) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

// arg is the value of argument i, which it forgets.
func (n *meteredCall) arg(i int) ref.Val {
	if i >= len(n.args) || n.args[i] == nil {
		return nil
	}
	v := n.args[i].last
	n.args[i].last = nil
	return v
}

// cost is what a call's work is worth beyond its node: the sizes it read
// and made. Sizes are measured only up to what is left, so that measuring
// costs no more than the budget it can exhaust.
func (n *meteredCall) cost(res ref.Val) uint64 {
	capAt := satAdd(n.m.left(), 1)
	switch n.Function() {
	case overloads.Size:
		if s, ok := n.arg(0).(types.String); ok {
			return flatSize(s) // counts code points
		}
		return 0
	case overloads.TypeConvertDyn, overloads.TypeConvertType:
		n.arg(0)
		return 0
	case operators.Add:
		a, b := n.arg(0), n.arg(1)
		if _, ok := a.(traits.MutableLister); ok {
			// A comprehension's accumulator, appended to in place.
			return flatSize(b)
		}
		return satAdd(satAdd(flatSize(a), flatSize(b)), flatSize(res))
	case operators.Equals, operators.NotEquals:
		a := deepSize(n.arg(0), capAt)
		return min(a, deepSize(n.arg(1), a))
	case operators.In:
		elem, container := n.arg(0), n.arg(1)
		if _, ok := container.(traits.Mapper); ok {
			return deepSize(elem, capAt)
		}
		return satAdd(deepSize(elem, capAt), deepSize(container, capAt))
	case overloads.Matches:
		// The pattern is compiled on each call, then run over the
		// string: a unit per two bytes per four bytes of pattern (RE2
		// takes tens of nanoseconds a byte).
		s, re := n.arg(0), n.arg(1)
		var sLen, reLen uint64
		if x, ok := s.(types.String); ok {
			sLen = uint64(len(x))
		}
		if x, ok := re.(types.String); ok {
			reLen = uint64(len(x))
		}
		return satAdd(satMul(1+sLen/2, 1+reLen/4), reLen)
	}
	var c uint64
	for i := range n.args {
		c = satAdd(c, flatSize(n.arg(i)))
	}
	return satAdd(c, flatSize(res))
}

// flatSize is what a value costs to copy or scan once: a tenth of a unit
// per string or bytes byte (as in cel's cost model), one per list or map
// element.
func flatSize(v ref.Val) uint64 {
	switch x := v.(type) {
	case nil:
		return 0
	case types.String:
		return (uint64(len(x)) + 9) / 10
	case types.Bytes:
		return (uint64(len(x)) + 9) / 10
	case traits.Sizer:
		if t := v.Type(); t == types.ListType || t == types.MapType {
			if n, ok := x.Size().(types.Int); ok && n > 0 {
				return uint64(n)
			}
		}
	}
	return 0
}

// Equality and membership walk nested values, converting each element
// from its Go form as they go; these weights make a unit of that walk cost
// about what a unit of evaluation does.
const (
	elemCost  = 3 // one list element
	entryCost = 6 // one map entry: a key, a lookup and a value
)

// deepSize is the work of walking a value for equality: a unit per ten
// string bytes, elemCost per list element and entryCost per map entry,
// through nested lists and maps. It stops counting at capAt.
func deepSize(v ref.Val, capAt uint64) uint64 {
	switch x := v.(type) {
	case nil:
		return 0
	case types.String, types.Bytes:
		return flatSize(x)
	}
	var n uint64
	nested := func(e ref.Val) bool {
		switch e.Type() {
		case types.ListType, types.MapType, types.StringType, types.BytesType:
			return true
		}
		return false
	}
	switch v.Type() {
	case types.ListType:
		l := v.(traits.Lister)
		if n = satMul(flatSize(l), elemCost); n >= capAt {
			return n
		}
		for it := l.Iterator(); n < capAt && it.HasNext() == types.True; {
			if e := it.Next(); nested(e) {
				n = satAdd(n, deepSize(e, capAt-n))
			}
		}
	case types.MapType:
		m := v.(traits.Mapper)
		if n = satMul(flatSize(m), entryCost); n >= capAt {
			return n
		}
		for it := m.Iterator(); n < capAt && it.HasNext() == types.True; {
			k := it.Next()
			n = satAdd(n, flatSize(k))
			if e := m.Get(k); n < capAt && nested(e) {
				n = satAdd(n, deepSize(e, capAt-n))
			}
		}
	}
	return n
}

func satMul(a, b uint64) uint64 {
	if b != 0 && a > math.MaxUint64/b {
		return math.MaxUint64
	}
	return a * b
}

// Expr is the template that evaluates one expression, given bare or as
// ${expr}, to its value: how a when condition, a map's items and a
// result cache's key are compiled.
func Expr(src string) json.RawMessage {
	c := strings.TrimSpace(src)
	if strings.HasPrefix(c, "${") && strings.HasSuffix(c, "}") {
		if end, err := Closing(c, 2); err == nil && end == len(c)-1 {
			c = strings.TrimSpace(c[2:end])
		}
	}
	b, _ := json.Marshal("${" + c + "}")
	return b
}

// Bool renders a condition compiled from Expr: true or false, or an error
// when it cannot be decided (a failed expression, a value not a bool).
func (t *Template) Bool(vars Vars) (bool, error) {
	out, err := t.Render(vars)
	switch {
	case err != nil:
		return false, err
	case string(out) == "true" || string(out) == "false":
		return string(out) == "true", nil
	}
	return false, fmt.Errorf("evaluated to %s, not a bool", Clip(string(out)))
}
