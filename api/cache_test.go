package api_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/api"
)

// TestInvalidateCacheOverHTTP: a step's cached output is reused by the
// next run; deleting its key's entry (the key as JSON) makes the next run
// run the step; a key that is not JSON is a 422 that names it.
func TestInvalidateCacheOverHTTP(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	wf := `{"name":"fetch","version":"1","steps":[{"id":"get","cache":{"key":"input.url","ttl":"1h"}}]}`
	if r := register(s, wf); r.status != 200 {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	runOnce := func() (cached bool) {
		t.Helper()
		r := s.do("POST", "/runs", `{"workflow":"fetch","input":{"url":"u1"}}`)
		if r.status != 200 && r.status != 201 {
			t.Fatalf("start: %d %s", r.status, r.raw)
		}
		if strings.Contains(r.raw, `"cached":{`) {
			return true
		}
		c := s.do("POST", "/steps/claim", `{"worker_id":"w1","max":1,"wait_ms":2000}`)
		leases, _ := c.body["leases"].([]any)
		if len(leases) != 1 {
			t.Fatalf("claim: %s", c.raw)
		}
		id := leases[0].(map[string]any)["id"].(string)
		if d := s.do("POST", "/steps/"+id+"/complete", `{"output":"page"}`); d.status != 200 {
			t.Fatalf("complete: %d %s", d.status, d.raw)
		}
		return false
	}
	if runOnce() {
		t.Fatal("the first run was cached")
	}
	for i := 0; !runOnce(); i++ { // the entry is written just after the complete
		if i == 100 {
			t.Fatal("a run after the first was never completed from the cache")
		}
	}
	r := s.do("DELETE", "/cache/fetch/get?key=%22u1%22", "")
	if r.status != 200 || r.body["deleted"] != float64(1) {
		t.Fatalf("invalidate u1: %d %s", r.status, r.raw)
	}
	if runOnce() {
		t.Fatal("a run after the invalidation was cached")
	}
	if r := s.do("DELETE", "/cache/fetch/get?key=%7B", ""); r.status != 422 || !strings.Contains(r.raw, "query.key") {
		t.Fatalf("invalidate a key that is not JSON: %d %s, want a 422 naming query.key", r.status, r.raw)
	}
}
