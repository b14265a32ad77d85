package api_test

import (
	"slices"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
)

func strs[E ~string](vs []E) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// Every enum of the spec is its Go type's Values, wherever the type is
// used: the lists are declared once, beside the constants.
func TestEnumsComeFromTheVocabulary(t *testing.T) {
	spec := api.Spec()
	schemas := spec.Components.Schemas.Map()
	runStatus := strs(cairn.RunStatus("").Values())
	stepStatus := strs(cairn.StepStatus("").Values())
	cases := []struct {
		schema, prop string
		want         []any
	}{
		{"Run", "status", runStatus},
		{"RunSummary", "status", runStatus},
		{"RunProgress", "status", runStatus},
		{"Ended", "run_status", runStatus},
		{"StepView", "status", stepStatus},
		{"StepProgress", "status", stepStatus},
		{"StepView", "kind", strs(cairn.StepKind("").Values())},
		{"Step", "kind", strs(cairn.StepKind("").Values())},
		{"Step", "delivery", strs(cairn.Delivery("").Values())},
		{"Lease", "delivery", strs(cairn.Delivery("").Values())},
		{"Attempt", "outcome", strs(cairn.AttemptOutcome("").Values())},
		{"JournalEntry", "type", strs(cairn.JournalType("").Values())},
		{"Problem", "reason", strs(cairn.Reason("").Values())},
		{"HeartbeatResult", "reason", strs(cairn.Reason("").Values())},
	}
	for _, c := range cases {
		s := schemas[c.schema]
		if s == nil || s.Properties[c.prop] == nil {
			t.Fatalf("the spec has no %s.%s", c.schema, c.prop)
		}
		if got := s.Properties[c.prop].Enum; !slices.Equal(got, c.want) {
			t.Errorf("%s.%s enum = %v, want %v", c.schema, c.prop, got, c.want)
		}
	}
	var status *huma.Param
	for _, p := range spec.Paths[api.BasePath+"/runs"].Get.Parameters {
		if p.Name == "status" {
			status = p
		}
	}
	if status == nil || !slices.Equal(status.Schema.Enum, runStatus) {
		t.Errorf("listRuns status parameter: %+v, want enum %v", status, runStatus)
	}
	// Every journal type is a distinct value, and every run end has one.
	seen := map[cairn.JournalType]bool{}
	for _, v := range cairn.JournalType("").Values() {
		if seen[v] {
			t.Errorf("journal type %s listed twice", v)
		}
		seen[v] = true
	}
	for _, s := range cairn.RunStatus("").Values() {
		if j := cairn.JournalRunEnded(s); s.Terminal() != (j != "") || j != "" && !seen[j] {
			t.Errorf("JournalRunEnded(%s) = %q", s, j)
		}
	}
}

// The enums are enforced on input: a listing filtered by a status that is
// not a run status is refused by the schema.
func TestEnumsValidateInput(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	r := s.do("GET", "/runs?status=sleeping", "")
	if r.status != 422 {
		t.Fatalf("list with an unknown status: %d %s", r.status, r.raw)
	}
}
