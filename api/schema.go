package api

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn"
)

// enum is a string type of the root package whose values are a closed
// set, listed once by its Values method next to its constants.
type enum[E any] interface {
	~string
	Values() []E
}

// enumSchema stands in for E when Huma builds a schema: a string whose
// enum is E's Values. Registered as E's type alias (enumSchemas), so every
// field, parameter and nested type of E gets that enum without a tag.
type enumSchema[E enum[E]] string

// Schema makes enumSchema a huma.SchemaProvider. It returns a new schema
// each time: Huma writes each field's doc into the schema it is given.
func (enumSchema[E]) Schema(huma.Registry) *huma.Schema {
	var zero E
	s := &huma.Schema{Type: huma.TypeString}
	for _, v := range zero.Values() {
		s.Enum = append(s.Enum, string(v))
	}
	return s
}

func registerEnum[E enum[E]](r huma.Registry) {
	r.RegisterTypeAlias(reflect.TypeFor[E](), reflect.TypeFor[enumSchema[E]]())
}

// enumSchemas makes the schema of each enumerated type of the
// vocabulary its list of values. A new enumerated type is one line here
// (and a Values method beside its constants).
func enumSchemas(r huma.Registry) {
	registerEnum[cairn.RunStatus](r)
	registerEnum[cairn.StepStatus](r)
	registerEnum[cairn.StepKind](r)
	registerEnum[cairn.Delivery](r)
	registerEnum[cairn.AttemptOutcome](r)
	registerEnum[cairn.JournalType](r)
	registerEnum[cairn.Reason](r)
	registerEnum[cairn.CompensationStatus](r)
	registerEnum[cairn.UpdateStatus](r)
}

// schemaName names the spec's schemas: a named Go type keeps its name
// (Run, Lease, ClaimRequest), and the anonymous body of an operation's
// input or output, which Huma names after the Go wrapper type
// (claimOutput → "ClaimOutputBody"), is named …Request or …Response
// like the named ones, so every generated client sees one scheme.
func schemaName(t reflect.Type, hint string) string {
	name := huma.DefaultSchemaNamer(t, hint)
	if deref(t).Name() != "" {
		return name
	}
	for suffix, repl := range map[string]string{"InputBody": "Request", "OutputBody": "Response"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base + repl
		}
	}
	return name
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// durationPattern matches what time.ParseDuration reads: "0", or a
// sequence of decimal numbers each with a unit ("1.5s", "1h30m").
const durationPattern = `^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$`

// durationSchema stands in for cairn.Duration: the one wire form of a
// duration in a definition is a Go duration string, declared with its
// pattern so every generator and validator knows it
// (docs/DECISIONS.md). Protocol timings are integer *_ms fields.
type durationSchema string

// Schema makes durationSchema a huma.SchemaProvider (a new schema each
// call: Huma writes each field's doc into it).
func (durationSchema) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{
		Type:     huma.TypeString,
		Pattern:  durationPattern,
		Examples: []any{"30s", "1h30m"},
	}
}

// publishKindOptions writes the root table of which optional step fields
// each kind takes (cairn.KindOptions) into the spec, as x-kind-options on
// the Step schema: {"task": ["delivery", …], "wait": ["event", …], …}.
// The TypeScript SDK generates its check of a step's options from it
// (sdk/ts/src/kinds.gen.ts), so neither SDK keeps a list of its own.
func publishKindOptions(r huma.Registry) {
	s := r.Map()["Step"]
	if s == nil {
		return
	}
	if s.Extensions == nil {
		s.Extensions = map[string]any{}
	}
	opts := map[string][]string{}
	for k, fields := range cairn.KindOptions() {
		opts[string(k)] = fields
	}
	s.Extensions["x-kind-options"] = opts
}

// SpecDocument is the API's OpenAPI document as committed in openapi/:
// JSON (3.1, or 3.0 with downgrade) or YAML.
func SpecDocument(format string, downgrade bool) ([]byte, error) {
	spec := Spec()
	var b []byte
	var err error
	if downgrade {
		b, err = spec.Downgrade()
	} else {
		b, err = json.MarshalIndent(spec, "", "  ")
	}
	if err != nil {
		return nil, err
	}
	if format == "yaml" {
		return yaml.JSONToYAML(b)
	}
	if downgrade {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		b, _ = json.MarshalIndent(v, "", "  ")
	}
	return b, nil
}
