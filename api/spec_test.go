package api_test

import (
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"testing"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
)

// No schema carries Huma's `$schema` link: it is not data, and every
// generated client would grow a field for it.
func TestSpecHasNoSchemaLinks(t *testing.T) {
	for name, s := range api.Spec().Components.Schemas.Map() {
		if _, ok := s.Properties["$schema"]; ok {
			t.Errorf("schema %s has a $schema property", name)
		}
	}
}

// optionalArrays are the array properties of response schemas that may
// be absent, each with its reason. Every other array a response can
// carry is required, and no array is nullable: the server sends [].
var optionalArrays = map[string]string{
	"Problem.errors":                "Huma's ErrorModel: only validation problems list field errors",
	"Step.after":                    "a definition as registered: steps without dependencies omit it",
	"RetryPolicy.non_retryable":     "a definition as registered: omitted when no class is listed",
	"RetryPolicy.retry_after_start": "a definition as registered: an at_most_once opt-in, omitted by default",
	"Ended.leases":                  "eager dispatch: only a complete with claim_next carries it",
	"Workflow.concurrency":          "a definition as registered: omitted when it declares no concurrency limit",
	"BatchFilter.status":            "a batch's filter as given: omitted when it does not filter by status",
	"Workflow.on_failure":           "a definition as registered: workflows without compensation omit it",
	"Lease.history":                 "only a function step's lease carries its history, and only once it has one",
	"StepView.operations":           "only a function step has operations, and only once its body checkpointed one",
	"Workflow.clear":                "a definition as registered: omitted unless an encrypted workflow leaves keys in the clear",
	"Step.events":                   "a definition as registered: a wait of one event names it in event instead",
	"Workflow.on":                   "a definition as registered: workflows without triggers omit it",
	"Workflow.cancel_on":            "a definition as registered: workflows that no event cancels omit it",
	"Step.next":                     "a definition as registered: steps that do not loop omit it",
}

func TestResponseArraysAreRequiredAndNotNull(t *testing.T) {
	spec := api.Spec()
	reg := spec.Components.Schemas
	seen := map[string]bool{}
	var walk func(name string, s *huma.Schema)
	walk = func(name string, s *huma.Schema) {
		if s == nil {
			return
		}
		if s.Ref != "" {
			n := strings.TrimPrefix(s.Ref, "#/components/schemas/")
			if seen[n] {
				return
			}
			seen[n] = true
			walk(n, reg.SchemaFromRef(s.Ref))
			return
		}
		if s.Type == huma.TypeArray && s.Nullable {
			t.Errorf("%s: a nullable array", name)
		}
		walk(name+"[]", s.Items)
		for prop, p := range s.Properties {
			walk(name+"."+prop, p)
			if p.Ref != "" || p.Type != huma.TypeArray {
				continue
			}
			_, excepted := optionalArrays[name+"."+prop]
			if !slices.Contains(s.Required, prop) && !excepted {
				t.Errorf("%s.%s: an array the server sends is not required (or list it in optionalArrays with a reason)", name, prop)
			}
		}
		if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
			walk(name+"{}", ap)
		}
	}
	n := 0
	for path, item := range spec.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			for status, r := range op.Responses {
				for _, mt := range r.Content {
					n++
					walk(op.OperationID+" "+status+" ("+path+")", mt.Schema)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no response schema found")
	}
	for name := range optionalArrays {
		if !seen[strings.Split(name, ".")[0]] {
			t.Errorf("optionalArrays lists %s, which no response carries", name)
		}
	}
}

// The document names where to send requests, describes every tag it uses
// once, and every operation says what it does beyond its summary.
func TestSpecServersTagsDescriptions(t *testing.T) {
	spec := api.Spec()
	if len(spec.Servers) == 0 || spec.Servers[0].URL != "http://127.0.0.1:8080" {
		t.Errorf("servers: want the local default first, got %v", spec.Servers)
	}
	described := map[string]bool{}
	for _, tag := range spec.Tags {
		if tag.Description == "" {
			t.Errorf("tag %s has no description", tag.Name)
		}
		described[tag.Name] = true
	}
	used := map[string]bool{}
	for path, item := range spec.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			if op.Description == "" || strings.HasPrefix(op.Description, "Needs a key") {
				t.Errorf("%s (%s) has no description of its own", op.OperationID, path)
			}
			if len(op.Tags) == 0 {
				t.Errorf("%s has no tag", op.OperationID)
			}
			for _, tag := range op.Tags {
				used[tag] = true
				if !described[tag] {
					t.Errorf("%s uses tag %s, which the document does not list", op.OperationID, tag)
				}
			}
		}
	}
	for name := range described {
		if !used[name] {
			t.Errorf("tag %s is listed but no operation uses it", name)
		}
	}
}

// Every problem carries what the spec's Problem requires (type, title,
// status), whoever wrote it: Huma's validation, the engine's errors, the
// router's 404 and 405, authentication. No body carries a $schema link.
func TestProblemsCarryWhatTheSpecRequires(t *testing.T) {
	required := api.Spec().Components.Schemas.Map()["Problem"].Required
	if !slices.Equal(required, []string{"type", "title", "status"}) {
		t.Fatalf("Problem requires %v", required)
	}
	s := newServer(t, api.Config{DevMode: true})
	k := newServer(t, api.Config{Keys: []auth.Key{{ID: "k", Scopes: []string{auth.ScopeRead}}}})
	for _, c := range []struct {
		s                  *server
		method, path, body string
	}{
		{s, "POST", "/runs", `{"workflow":1}`},
		{s, "GET", "/runs/nosuchrun", ""},
		{s, "GET", "/nowhere", ""},
		{s, "DELETE", "/runs", ""},
		{k, "GET", "/runs", ""},
	} {
		r := c.s.do(c.method, c.path, c.body)
		if r.status < 400 {
			t.Fatalf("%s %s: %d", c.method, c.path, r.status)
		}
		for _, f := range required {
			if r.body[f] == nil || r.body[f] == "" {
				t.Errorf("%s %s (%d): no %s in %s", c.method, c.path, r.status, f, r.raw)
			}
		}
		if r.body["type"] != api.ProblemType {
			t.Errorf("%s %s: type %v", c.method, c.path, r.body["type"])
		}
	}
	if r := s.do("GET", "/healthz", ""); r.status != 200 || strings.Contains(r.raw, "$schema") {
		t.Errorf("healthz %d: %s", r.status, r.raw)
	}
}
