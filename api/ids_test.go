package api_test

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/engine"
)

// nastyIDs are no valid id of any kind: dot segments, slashes, empty
// segments, control characters, invalid UTF-8, spaces, too many bytes.
var nastyIDs = []string{
	".", "..", "a/b", "a//b", "/a", "a/", "../x", "a/../b",
	"a\x00b", "\x00", "a\r\nb", "a\nb", "a\tb", "\x7f", "a\x1bb",
	"\xff", "a\xc3", "a b", strings.Repeat("A", 3000),
}

// wantNamed fails unless r is a 4xx problem (400, 404 or 422) and, when
// a 422, names loc.
func wantNamed(t *testing.T, what string, r reply, loc string) {
	t.Helper()
	if r.status != 400 && r.status != 404 && r.status != 422 {
		t.Fatalf("%s: status %d, want 400, 404 or 422: %s", what, r.status, r.raw)
	}
	if !strings.HasPrefix(r.ctype, "application/problem+json") {
		t.Fatalf("%s: content type %q, want problem+json: %s", what, r.ctype, r.raw)
	}
	if r.status == 422 && !strings.Contains(r.raw, `"location":"`+loc+`"`) {
		t.Fatalf("%s: problem does not name %s: %s", what, loc, r.raw)
	}
}

// Invalid ids anywhere are 4xx problems naming the field: never a 5xx
// (they reached the store as invalid keys and came back as a 502).
func TestInvalidIDsAreNamed4xx(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	if r := register(s, okWorkflow); r.status != 200 {
		t.Fatal(r.raw)
	}
	run := s.do("POST", "/runs", `{"workflow":"wf"}`).body["run"].(map[string]any)["id"].(string)
	for _, id := range nastyIDs {
		p, q, j := url.PathEscape(id), url.QueryEscape(id), api.JSONQuote(id)
		cases := []struct{ method, path, body, loc string }{
			{"GET", "/runs/" + p, "", "path.run"},
			{"GET", "/runs/" + p + "/journal", "", "path.run"},
			{"GET", "/runs/" + p + "/status", "", "path.run"},
			{"POST", "/runs/" + p + "/cancel", `{}`, "path.run"},
			{"POST", "/runs/" + p + "/events", `{"name":"go"}`, "path.run"},
			{"GET", "/workflows/" + p + "/versions/1", "", "path.name"},
			{"GET", "/workflows/wf/versions/" + p, "", "path.version"},
			{"GET", "/runs?cursor=" + q, "", "query.cursor"},
			{"GET", "/runs?workflow=" + q, "", "query.workflow"},
			{"POST", "/workers/register", `{"worker_id":` + j + `,"workflows":[]}`, "body.worker_id"},
			{"POST", "/steps/claim", `{"worker_id":` + j + `}`, "body.worker_id"},
			{"POST", "/steps/claim", `{"worker_id":"w1","run":` + j + `}`, "body.run"},
			{"POST", "/runs", `{"workflow":` + j + `}`, "body.workflow"},
			{"POST", "/runs", `{"workflow":"wf","version":` + j + `}`, "body.version"},
		}
		for _, c := range cases {
			wantNamed(t, fmt.Sprintf("%s %s %q", c.method, c.path, c.body), s.do(c.method, c.path, c.body), c.loc)
		}
	}
	// Event names and ids are text, not keys: "." or "a/b" is a name.
	for _, id := range []string{"a\x00b", "a\r\nb", "\x7f", strings.Repeat("e", 129)} {
		j := api.JSONQuote(id)
		wantNamed(t, "event name "+j, s.do("POST", "/runs/"+run+"/events", `{"name":`+j+`}`), "body.name")
		wantNamed(t, "event id "+j, s.do("POST", "/runs/"+run+"/events", `{"name":"go","id":`+j+`}`), "body.id")
	}
	if r := s.do("POST", "/runs/"+run+"/events", `{"name":"a/../b"}`); r.status != 200 {
		t.Fatalf("event named a/../b: %d %s", r.status, r.raw)
	}
}

// The OpenAPI document states the engine's id rules, so clients can check
// ids before sending them and the server's answer holds no surprise.
func TestSpecStatesTheEngineIDPatterns(t *testing.T) {
	doc := api.Spec()
	param := func(path, method, name string) (string, int) {
		t.Helper()
		o := doc.Paths[api.BasePath+path].Get
		if method == "POST" {
			o = doc.Paths[api.BasePath+path].Post
		}
		for _, p := range o.Parameters {
			if p.Name == name {
				return p.Schema.Pattern, *p.Schema.MaxLength
			}
		}
		t.Fatalf("%s %s has no parameter %s", method, path, name)
		return "", 0
	}
	check := func(what, got string, gotMax int, want string, wantMax int) {
		t.Helper()
		if got != want || gotMax != wantMax {
			t.Fatalf("%s: pattern %q max %d, want %q max %d", what, got, gotMax, want, wantMax)
		}
	}
	for _, p := range []struct{ path, method string }{
		{"/runs/{run}", "GET"}, {"/runs/{run}/journal", "GET"}, {"/runs/{run}/status", "GET"},
		{"/runs/{run}/cancel", "POST"}, {"/runs/{run}/events", "POST"}, {"/runs/{run}/pause", "POST"}, {"/runs/{run}/resume", "POST"},
	} {
		got, max := param(p.path, p.method, "run")
		check(p.path, got, max, engine.RunIDPattern, engine.MaxRunIDLength)
	}
	got, max := param("/workflows/{name}/versions/{version}", "GET", "name")
	check("workflow name", got, max, engine.WorkflowNamePattern, engine.MaxWorkflowNameLength)
	got, max = param("/workflows/{name}/versions/{version}", "GET", "version")
	check("workflow version", got, max, engine.VersionPattern, engine.MaxVersionLength)
	got, max = param("/runs", "GET", "workflow")
	check("workflow filter", got, max, engine.WorkflowNamePattern, engine.MaxWorkflowNameLength)
	got, max = param("/runs", "GET", "cursor")
	check("cursor", got, max, engine.CursorPattern, engine.MaxCursorLength)

	// Optional body ids may be empty: absent.
	optional := func(p string) string { return "^(" + p[1:len(p)-1] + ")?$" }
	body := func(schema, field string) (string, int) {
		s := doc.Components.Schemas.Map()[schema].Properties[field]
		return s.Pattern, *s.MaxLength
	}
	got, max = body("RegisterRequest", "worker_id")
	check("register worker_id", got, max, optional(engine.WorkerIDPattern), engine.MaxWorkerIDLength)
	if slices.Contains(doc.Components.Schemas.Map()["RegisterRequest"].Required, "worker_id") {
		t.Fatal("register: worker_id is required in the spec; the server generates one")
	}
	got, max = body("StartRequest", "workflow")
	check("start workflow", got, max, engine.WorkflowNamePattern, engine.MaxWorkflowNameLength)
	got, max = body("StartRequest", "version")
	check("start version", got, max, optional(engine.VersionPattern), engine.MaxVersionLength)
	got, max = body("EventRequest", "name")
	check("event name", got, max, engine.TextPattern, engine.MaxEventNameLength)

	// The engine's name and version patterns are those registration
	// enforces.
	names := regexp.MustCompile(engine.WorkflowNamePattern)
	versions := regexp.MustCompile(engine.VersionPattern)
	for _, v := range []string{"wf", "a.b", "a-b_c", "1.2.3+build", "a+b", "_a", ".a", "-a", "a/b", "a b", "a:b", "a@b", "é"} {
		w := cairn.Workflow{Name: v, Version: v, Steps: []cairn.Step{{ID: "a"}}}
		refused := map[string]bool{}
		var verr cairn.ValidationError
		if errors.As(w.Validate("w"), &verr) {
			for _, f := range verr {
				refused[f.Field] = true
			}
		}
		if got, want := names.MatchString(v), !refused["w.name"]; got != want {
			t.Errorf("name %q: engine says %v, registration %v", v, got, want)
		}
		if got, want := versions.MatchString(v), !refused["w.version"]; got != want {
			t.Errorf("version %q: engine says %v, registration %v", v, got, want)
		}
	}
}
