package api_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
)

// TestClaimHoldAndPause: the server's claim hold caps wait_ms, an empty
// answer carries pause_ms, an answer with leases does not, and a server
// without a pause sends none; register reports the hold as max_hold_ms.
func TestClaimHoldAndPause(t *testing.T) {
	serve := func(cfg engine.Config) *server {
		e, err := engine.New(mem.New(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		ts := httptest.NewServer(api.New(e, api.Config{DevMode: true}).Handler())
		t.Cleanup(ts.Close)
		return &server{t: t, url: ts.URL + api.BasePath}
	}
	s := serve(engine.Config{ClaimHold: 300 * time.Millisecond, ClaimPause: 7 * time.Second})
	r := register(s, okWorkflow)
	if r.status != 200 || r.body["max_hold_ms"] != float64(300) {
		t.Fatalf("register: %d %s; want max_hold_ms 300", r.status, r.raw)
	}
	began := time.Now()
	r = s.do("POST", "/steps/claim", `{"worker_id":"w1","wait_ms":10000}`)
	took := time.Since(began)
	if r.status != 200 || r.body["pause_ms"] != float64(7000) || len(r.body["leases"].([]any)) != 0 {
		t.Fatalf("empty claim: %d %s; want no lease and pause_ms 7000", r.status, r.raw)
	}
	if took < 250*time.Millisecond || took > 2*time.Second {
		t.Fatalf("a claim asking 10 s was held %v; want the 300 ms hold", took)
	}
	if r := s.do("POST", "/runs", `{"workflow":"wf"}`); r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.raw)
	}
	r = s.do("POST", "/steps/claim", `{"worker_id":"w1","wait_ms":10000}`)
	if r.status != 200 || len(r.body["leases"].([]any)) != 1 {
		t.Fatalf("claim: %d %s; want a lease", r.status, r.raw)
	}
	if _, ok := r.body["pause_ms"]; ok {
		t.Fatalf("a claim with a lease carries pause_ms: %s", r.raw)
	}

	// No pause configured: none sent; no hold: the claim answers at once.
	s = serve(engine.Config{ClaimHold: -1})
	register(s, okWorkflow)
	began = time.Now()
	r = s.do("POST", "/steps/claim", `{"worker_id":"w1","wait_ms":10000}`)
	if _, ok := r.body["pause_ms"]; ok || r.status != 200 {
		t.Fatalf("claim without a pause configured: %d %s", r.status, r.raw)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("a claim with no hold was held %v", took)
	}
}
