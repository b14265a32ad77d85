package api_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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

// Schema names follow one scheme: a body is a named view (Run, Lease),
// an …Request or a …Response, never a Go wrapper's name ("…OutputBody").
func TestSchemaNames(t *testing.T) {
	for name := range api.Spec().Components.Schemas.Map() {
		if strings.HasSuffix(name, "Body") || strings.HasSuffix(name, "Input") || strings.HasSuffix(name, "Output") {
			t.Errorf("schema %s is named after a Go wrapper type", name)
		}
	}
	schemas := api.Spec().Components.Schemas.Map()
	for _, want := range []string{"ClaimResponse", "HeartbeatManyRequest", "HeartbeatManyResponse", "CancelRequest", "RegisterRequest", "RegisterResponse"} {
		if schemas[want] == nil {
			t.Errorf("the spec has no schema %s", want)
		}
	}
}

// A duration in a definition is a Go duration string, declared with a
// pattern that accepts what time.ParseDuration reads and nothing else.
func TestDurationSchema(t *testing.T) {
	p := api.Spec().Components.Schemas.Map()["RetryPolicy"].Properties["initial_backoff"]
	if p == nil || p.Type != "string" || p.Pattern == "" {
		t.Fatalf("RetryPolicy.initial_backoff: %+v, want a string with a pattern", p)
	}
	re := regexp.MustCompile(p.Pattern)
	for _, s := range []string{"0", "30s", "1.5s", "1h30m", "300ms", "2us", "5µs", "-1s", ".5s", "1.s", "1h2m3s4ms5us6ns"} {
		if _, err := time.ParseDuration(s); err != nil {
			t.Fatalf("test case %q: %v", s, err)
		}
		if !re.MatchString(s) {
			t.Errorf("pattern refuses %q, which Go reads", s)
		}
	}
	for _, s := range []string{"", "1", "30", "1d", "s", "1 s", "PT1S", "1.5.s", "abc"} {
		if _, err := time.ParseDuration(s); err == nil {
			t.Fatalf("test case %q parses", s)
		}
		if re.MatchString(s) {
			t.Errorf("pattern accepts %q, which Go refuses", s)
		}
	}
}
