package api

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// Unknown paths and methods are problems, not the mux's plain text.
func TestUnknownPathsAndMethodsAreProblems(t *testing.T) {
	a, _ := newTestAPI(t, nil)
	for _, path := range []string{"/nope", BasePath + "/nope", BasePath + "/runs/x/y/z", BasePath + "/"} {
		wantProblem(t, serve(a, httptest.NewRequest("GET", path, nil)), 404)
	}
	rec := serve(a, httptest.NewRequest("DELETE", BasePath+"/runs", nil))
	wantProblem(t, rec, 405)
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("Allow %q, want GET and POST", allow)
	}
	rec = serve(a, httptest.NewRequest("GET", BasePath+"/workers/register", nil))
	wantProblem(t, rec, 405)
	if allow := rec.Header().Get("Allow"); allow != "POST" {
		t.Fatalf("Allow %q, want POST", allow)
	}
}
