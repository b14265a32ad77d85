package api_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn/api"
)

// What the spec fuzz (scripts/spec-fuzz, make fuzz-spec) found, each
// kept as the request that showed it.

// Every operation that takes a body documents the 400 it answers to a
// missing or malformed one, and the 413 to one over its limit.
func TestBodyErrorsAreInTheSpec(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	n := 0
	for path, item := range api.Spec().Paths {
		for method, op := range map[string]*huma.Operation{"POST": item.Post, "PUT": item.Put, "PATCH": item.Patch} {
			if op == nil || op.RequestBody == nil {
				continue
			}
			n++
			for _, code := range []string{"400", "413"} {
				if op.Responses[code] == nil {
					t.Errorf("%s does not document %s", op.OperationID, code)
				}
			}
			// A path of real-looking ids: the body is refused before
			// anything is looked up.
			p := strings.NewReplacer("{run}", "R1", "{lease}", "L1", "{schedule}", "s1", "{worker}", "w1").Replace(strings.TrimPrefix(path, api.BasePath))
			r := s.do(method, p, "")
			if r.status != 400 || !strings.HasPrefix(r.ctype, "application/problem+json") {
				t.Errorf("%s %s without a body: %d %q %s", method, p, r.status, r.ctype, r.raw)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d operations with a body", n)
	}
}

// A query parameter sent empty is refused where its schema does not
// allow "" (Huma would read it as absent: `?workflow=` listed every run);
// one whose schema allows "" is served.
func TestEmptyQueryValuesTheSpecRefusesAre422(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	for _, c := range []struct {
		query  string
		status int
		loc    string
	}{
		{"workflow=", 422, "query.workflow"},
		{"started_before=", 422, "query.started_before"},
		{"status=", 422, "query.status"},
		{"limit=", 422, "query.limit"},
		{"workflow=wf&limit=", 422, "query.limit"},
		{"correlation=&id_prefix=&cursor=", 200, ""},
		{"workflow=wf&limit=5", 200, ""},
	} {
		r := s.do("GET", "/runs?"+c.query, "")
		if r.status != c.status || c.loc != "" && !strings.Contains(r.raw, `"location":"`+c.loc+`"`) {
			t.Errorf("GET /runs?%s: %d %s, want %d naming %q", c.query, r.status, r.raw, c.status, c.loc)
		}
	}
	if r := s.do("GET", "/runs/R1/status?holders=", ""); r.status != 422 || !strings.Contains(r.raw, "query.holders") {
		t.Errorf("holders=: %d %s", r.status, r.raw)
	}
}

// A null where the schema allows none is refused, naming the field, and
// nothing is applied (Huma would read it as absent: a batch whose
// started_before was null ran as one without it). Where the schema
// allows any value (a run's input), null is a value.
func TestNullWhereTheSpecAllowsNoneIs422(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	for _, c := range []struct {
		path, body, loc string
	}{
		{"/batches", `{"action":"rerun","filter":{"started_after":"2000-01-01T00:00:00Z","started_before":null}}`, "body.filter.started_before"},
		{"/workers/register", `{"worker_id":"w2","workflows":[{"name":"n0","version":"0","on_failure":null,"steps":[{"id":"A"}]}]}`, "body.workflows[0].on_failure"},
		{"/workers/register", `{"worker_id":null,"workflows":[]}`, "body.worker_id"},
		{"/runs", `{"workflow":"wf","version":null}`, "body.version"},
	} {
		r := s.do("POST", c.path, c.body)
		if r.status != 422 || !strings.Contains(r.raw, `"location":"`+c.loc+`"`) || !strings.HasPrefix(r.ctype, "application/problem+json") {
			t.Errorf("POST %s %s: %d %q %s, want 422 naming %s", c.path, c.body, r.status, r.ctype, r.raw, c.loc)
		}
	}
	if r := s.do("GET", "/workflows", ""); strings.Contains(r.raw, "n0") {
		t.Errorf("the refused register was applied: %s", r.raw)
	}
	if r := s.do("GET", "/workers", ""); strings.Contains(r.raw, "w2") {
		t.Errorf("the refused register was applied: %s", r.raw)
	}
	register(s, okWorkflow)
	if r := s.do("POST", "/runs", `{"workflow":"wf","input":null,"state":{"k":null}}`); r.status != 201 {
		t.Errorf("a null input: %d %s", r.status, r.raw)
	}
}

// The answers that create something link to the operations on it: what
// the fuzzer's stateful sequences (and other tools) follow.
func TestSpecLinksCreatedThingsToTheirOperations(t *testing.T) {
	spec := api.Spec()
	start := spec.Paths[api.BasePath+"/runs"].Post.Responses["201"]
	for _, to := range []string{"getRun", "getRunStatus", "cancelRun", "sendEvent"} {
		l := start.Links[to]
		if l == nil || l.OperationID != to || l.Parameters["run"] != "$response.body#/run/id" {
			t.Errorf("startRun 201 has no link to %s: %+v", to, l)
		}
	}
	links := 0
	for _, item := range spec.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Delete} {
			if op == nil {
				continue
			}
			for _, r := range op.Responses {
				for _, l := range r.Links {
					links++
					if !slices.ContainsFunc(operations(spec), func(o *huma.Operation) bool { return o.OperationID == l.OperationID }) {
						t.Errorf("%s links to %s, which does not exist", op.OperationID, l.OperationID)
					}
				}
			}
		}
	}
	if links < 20 {
		t.Errorf("%d links", links)
	}
}

func operations(spec *huma.OpenAPI) []*huma.Operation {
	var ops []*huma.Operation
	for _, item := range spec.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op != nil {
				ops = append(ops, op)
			}
		}
	}
	return ops
}
