package api_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/api"
)

// A path the ServeMux would clean (and redirect to another resource) is
// answered where it stands: an odd segment in a parameter's place names
// the parameter.
func TestOddPathSegmentsNameTheParameter(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	register(s, okWorkflow)
	cases := []struct {
		method, path string
		status       int
		loc          string
	}{
		{"GET", "/runs/.", 422, "path.run"},
		{"GET", "/runs/..", 422, "path.run"},
		{"GET", "/runs/%2e%2e", 422, "path.run"},
		{"GET", "/runs/%2E", 422, "path.run"},
		{"GET", "/runs//journal", 422, "path.run"},
		{"GET", "/runs/./journal", 422, "path.run"},
		{"POST", "/runs/../cancel", 422, "path.run"},
		{"GET", "/workflows/./versions/1", 422, "path.name"},
		{"GET", "/workflows/wf/versions/..", 422, "path.version"},
		{"GET", "/workflows//versions/", 404, ""},
		{"GET", "/./runs", 404, ""},
		{"GET", "/runs/", 404, ""},
	}
	for _, c := range cases {
		r := s.do(c.method, c.path, "")
		if r.status != c.status || !strings.HasPrefix(r.ctype, "application/problem+json") {
			t.Fatalf("%s %s: %d %q, want %d problem+json: %s", c.method, c.path, r.status, r.ctype, c.status, r.raw)
		}
		if c.loc != "" && !strings.Contains(r.raw, `"location":"`+c.loc+`"`) {
			t.Fatalf("%s %s: does not name %s: %s", c.method, c.path, c.loc, r.raw)
		}
	}
}
