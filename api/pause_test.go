package api_test

import (
	"testing"

	"github.com/cairn-dev/cairn/api"
)

// TestPauseAndResumeRun: pause and resume answer the run in its new
// status, again the same without change; a claim offers nothing of a
// paused run; both are a 409 once the run ended, and a 404 for no run.
func TestPauseAndResumeRun(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	register(s, okWorkflow)
	run := s.do("POST", "/runs", `{"workflow":"wf"}`).body["run"].(map[string]any)["id"].(string)
	status := func(op string, want int, wantStatus string) {
		t.Helper()
		r := s.do("POST", "/runs/"+run+"/"+op, "")
		if r.status != want || want == 200 && r.body["status"] != wantStatus {
			t.Fatalf("%s: %d %s, want %d %s", op, r.status, r.raw, want, wantStatus)
		}
	}
	status("pause", 200, "paused")
	status("pause", 200, "paused")
	if c := s.do("POST", "/steps/claim", `{"worker_id":"w1","max":1}`); c.status != 200 || len(c.body["leases"].([]any)) != 0 {
		t.Fatalf("claim of a paused run: %d %s", c.status, c.raw)
	}
	status("resume", 200, "running")
	status("resume", 200, "running")
	if c := s.do("POST", "/steps/claim", `{"worker_id":"w1","max":1,"wait_ms":1000}`); c.status != 200 || len(c.body["leases"].([]any)) != 1 {
		t.Fatalf("claim of the resumed run: %d %s", c.status, c.raw)
	}
	s.do("POST", "/runs/"+run+"/cancel", `{}`)
	status("pause", 409, "")
	status("resume", 409, "")
	if r := s.do("POST", "/runs/7YBPXZTEZV538B6WJJQHSNS80G/pause", ""); r.status != 404 {
		t.Fatalf("pause of no run: %d %s", r.status, r.raw)
	}
}
