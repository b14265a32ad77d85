package api

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"

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
}
