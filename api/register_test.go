package api_test

import (
	"regexp"
	"testing"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/engine"
)

// register without worker_id: the spec says optional, and the server
// generates an id the worker then claims with.
func TestRegisterWithoutWorkerID(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	for _, body := range []string{`{"workflows":[` + okWorkflow + `]}`, `{"worker_id":"","workflows":[` + okWorkflow + `]}`} {
		r := s.do("POST", "/workers/register", body)
		id, _ := r.body["worker_id"].(string)
		if r.status != 200 || !regexp.MustCompile(engine.WorkerIDPattern).MatchString(id) {
			t.Fatalf("register %s: %d %s", body, r.status, r.raw)
		}
		if r := s.do("POST", "/steps/claim", `{"worker_id":"`+id+`"}`); r.status != 200 {
			t.Fatalf("claim as %s: %d %s", id, r.status, r.raw)
		}
	}
	r := s.do("GET", "/workers", "")
	if n := len(r.body["workers"].([]any)); n != 2 {
		t.Fatalf("%d workers, want 2: %s", n, r.raw)
	}
}
