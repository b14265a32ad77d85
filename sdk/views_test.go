package sdk

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
)

// viewCases are the API's answers the SDK reads, and the Go type each
// reaches the program as. unwrap names a property of the answer whose
// value is the type itself (startRun's run is the Run Start returns; its
// other properties are fields of Run too).
var viewCases = []struct {
	op     string
	typ    reflect.Type
	unwrap string
}{
	{"getRun", reflect.TypeFor[Run](), ""},
	{"cancelRun", reflect.TypeFor[Run](), ""},
	{"startRun", reflect.TypeFor[Run](), "run"},
	{"listRuns", reflect.TypeFor[RunPage](), ""},
	{"getRunStatus", reflect.TypeFor[cairn.RunProgress](), ""},
	{"getRunJournal", reflect.TypeFor[struct {
		Entries []JournalEntry `json:"entries"`
	}](), ""},
	{"sendEvent", reflect.TypeFor[EventResult](), ""},
	{"listWorkflows", reflect.TypeFor[struct {
		Workflows []WorkflowSummary `json:"workflows"`
	}](), ""},
	{"getWorkflow", reflect.TypeFor[cairn.Workflow](), ""},
	{"listWorkers", reflect.TypeFor[struct {
		Workers []WorkerInfo `json:"workers"`
	}](), ""},
	{"createBatch", reflect.TypeFor[Batch](), ""},
	{"getBatch", reflect.TypeFor[Batch](), ""},
	{"getStepInput", reflect.TypeFor[InputView](), ""},
}

// TestSDKExposesEveryAPIField walks the schema of each answer the SDK
// reads, property by property and into nested objects, and fails when
// the Go type the SDK hands out has no field of that JSON name: a field
// the API sends must reach the program (as steps[].holder once did not).
func TestSDKExposesEveryAPIField(t *testing.T) {
	spec := api.Spec()
	reg := spec.Components.Schemas
	for _, c := range viewCases {
		s := responseSchema(t, spec, c.op)
		var missing []string
		if c.unwrap != "" {
			for name, p := range s.Properties {
				if name == c.unwrap {
					missing = append(missing, missingFields(reg, p, c.typ, c.op+"."+name)...)
				} else if _, ok := jsonFields(c.typ)[name]; !ok {
					missing = append(missing, c.op+"."+name)
				}
			}
		} else {
			missing = missingFields(reg, s, c.typ, c.op)
		}
		sort.Strings(missing)
		for _, m := range missing {
			t.Errorf("the API sends %s, which %v does not expose", m, c.typ)
		}
	}
}

// The check fails for a type that drops a field, as the SDK's StepView
// once dropped holder.
func TestSDKFieldCheckFindsDroppedFields(t *testing.T) {
	spec := api.Spec()
	type oldStepView struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	type oldRun struct {
		ID    string        `json:"id"`
		Steps []oldStepView `json:"steps"`
	}
	missing := missingFields(spec.Components.Schemas, responseSchema(t, spec, "getRun"), reflect.TypeFor[oldRun](), "getRun")
	if !strings.Contains(strings.Join(missing, " "), "getRun.steps[].holder") {
		t.Fatalf("the check missed steps[].holder: %v", missing)
	}
}

func responseSchema(t *testing.T, spec *huma.OpenAPI, op string) *huma.Schema {
	t.Helper()
	for _, item := range spec.Paths {
		for _, o := range []*huma.Operation{item.Get, item.Post, item.Put, item.Delete, item.Patch} {
			if o == nil || o.OperationID != op {
				continue
			}
			for status, r := range o.Responses {
				if strings.HasPrefix(status, "2") && r.Content["application/json"] != nil {
					return r.Content["application/json"].Schema
				}
			}
		}
	}
	t.Fatalf("no operation %s with a JSON answer in the spec", op)
	return nil
}

// missingFields lists the properties of s, at path and below, that t has
// no field for.
func missingFields(reg huma.Registry, s *huma.Schema, t reflect.Type, path string) []string {
	s = resolve(reg, s)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	switch {
	case s.Items != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		return missingFields(reg, s.Items, t.Elem(), path+"[]")
	case len(s.Properties) > 0:
		if t.Kind() != reflect.Struct {
			return []string{fmt.Sprintf("%s (an object; %v is not a struct)", path, t)}
		}
		fields := jsonFields(t)
		for name, p := range s.Properties {
			ft, ok := fields[name]
			if !ok {
				out = append(out, path+"."+name)
				continue
			}
			out = append(out, missingFields(reg, p, ft, path+"."+name)...)
		}
	case s.AdditionalProperties != nil && t.Kind() == reflect.Map:
		if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
			return missingFields(reg, ap, t.Elem(), path+"{}")
		}
	}
	return out
}

func resolve(reg huma.Registry, s *huma.Schema) *huma.Schema {
	if s != nil && s.Ref != "" {
		return reg.SchemaFromRef(s.Ref)
	}
	return s
}

// jsonFields maps the JSON names of t's fields (embedded structs'
// included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for n, ft := range jsonFields(f.Type) {
				if _, shadowed := out[n]; !shadowed {
					out[n] = ft
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
