package api

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAccessLog: one line per call with the request id (the caller's when
// usable, echoed back), the operation, route, status and run; no bodies.
func TestAccessLog(t *testing.T) {
	a, logs := newTestAPI(t, nil)
	req := httptest.NewRequest("GET", BasePath+"/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV", nil)
	req.Header.Set("X-Request-Id", "trace-me-1")
	rec := serve(a, req)
	if rec.Code != 404 || rec.Header().Get("X-Request-Id") != "trace-me-1" {
		t.Fatalf("status %d, request id %q", rec.Code, rec.Header().Get("X-Request-Id"))
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "api call") && strings.Contains(l, "trace-me-1") {
			line = l
		}
	}
	for _, want := range []string{"op=getRun", "route=/v1/api/runs/{run}", "status=404", "run=01ARZ3NDEKTSV4RRFFQ69G5FAV", "key=dev", "method=GET"} {
		if !strings.Contains(line, want) {
			t.Fatalf("access log line %q lacks %q\n%s", line, want, logs)
		}
	}
	// A request id that is not safe to log is replaced.
	req = httptest.NewRequest("GET", BasePath+"/healthz", nil)
	req.Header.Set("X-Request-Id", "bad id\twith tabs")
	rec = serve(a, req)
	if got := rec.Header().Get("X-Request-Id"); got == "" || strings.ContainsAny(got, " \t") {
		t.Fatalf("request id %q", got)
	}
	// A body is never logged.
	req = httptest.NewRequest("POST", BasePath+"/runs", strings.NewReader(`{"workflow":"nope","input":{"secret":"hunter2"}}`))
	req.Header.Set("Content-Type", "application/json")
	serve(a, req)
	if strings.Contains(logs.String(), "hunter2") {
		t.Fatal("a request body reached the log")
	}
}
