package api

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
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

// The access log writes the routine polls that succeed at debug — a status
// long-poll, a heartbeat, a claim that returned nothing — and keeps calls
// that change state, a claim that returned a lease and errors at info: a
// dev log is not buried under its polls.
func TestAccessLogRoutinePollsAtDebug(t *testing.T) {
	e, err := engine.New(mem.New(), engine.Config{ClaimHold: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	logs := &syncBuffer{}
	a := New(e, Config{DevMode: true, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	call := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		var req *http.Request
		if body == "" {
			req = httptest.NewRequest(method, BasePath+path, nil)
		} else {
			req = httptest.NewRequest(method, BasePath+path, strings.NewReader(body))
		}
		rec := serve(a, req)
		if rec.Code >= 300 && !strings.Contains(path, "NOPE") {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec
	}
	call("POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"wf","version":"1","steps":[{"id":"a"}]}]}`)
	var started struct {
		Run struct{ ID string } `json:"run"`
	}
	json.Unmarshal(call("POST", "/runs", `{"workflow":"wf"}`).Body.Bytes(), &started)
	var claimed struct {
		Leases []struct{ ID string } `json:"leases"`
	}
	json.Unmarshal(call("POST", "/steps/claim", `{"worker_id":"w1"}`).Body.Bytes(), &claimed)
	if len(claimed.Leases) != 1 {
		t.Fatalf("claimed %+v", claimed)
	}
	lease := claimed.Leases[0].ID
	call("POST", "/steps/"+lease+"/heartbeat", "")
	call("POST", "/steps/heartbeat", `{"leases":["`+lease+`"]}`)
	call("GET", "/runs/"+started.Run.ID+"/status", "")
	call("POST", "/steps/claim", `{"worker_id":"w1"}`) // nothing left
	call("GET", "/healthz", "")
	call("GET", "/runs/NOPE/status", "")

	levels := map[string][]string{}
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, "msg=\"api call\"") {
			continue
		}
		op, level := "", ""
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "op="); ok {
				op = v
			}
			if v, ok := strings.CutPrefix(f, "level="); ok {
				level = v
			}
			if v, ok := strings.CutPrefix(f, "status="); ok && v == "404" {
				op += "/404"
			}
		}
		levels[op] = append(levels[op], level)
	}
	for op, want := range map[string][]string{
		"registerWorker":   {"INFO"},
		"startRun":         {"INFO"},
		"claimSteps":       {"INFO", "DEBUG"}, // a lease, then nothing
		"heartbeatStep":    {"DEBUG"},
		"heartbeatSteps":   {"DEBUG"},
		"getRunStatus":     {"DEBUG"},
		"health":           {"DEBUG"},
		"getRunStatus/404": {"INFO"},
	} {
		if fmt.Sprint(levels[op]) != fmt.Sprint(want) {
			t.Errorf("%s logged at %v, want %v\n%s", op, levels[op], want, logs)
		}
	}
}
