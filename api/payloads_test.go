package api_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
)

// Over HTTP: an output at the per-payload limit is accepted, one byte
// more is a 422 naming body.output; a start input over it names
// body.input; the run view resolves the output; a payload is fetched by
// its reference from the run's route and the lease's route; a bad hash
// is a 422 naming it.
func TestPayloadLimitsOverHTTP(t *testing.T) {
	const limit = 200 << 10
	e, err := engine.New(mem.New(), engine.Config{MaxOutputBytes: limit, ViewResolveBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.New(e, api.Config{DevMode: true}).Handler())
	t.Cleanup(ts.Close)
	s := &server{t: t, url: ts.URL + api.BasePath}
	if r := register(s, okWorkflow); r.status != 200 {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	str := func(n int) string { return `"` + strings.Repeat("z", n-2) + `"` }
	if r := s.do("POST", "/runs", `{"workflow":"wf","input":`+str(limit+1)+`}`); r.status != 422 || !strings.Contains(r.raw, "body.input") {
		t.Fatalf("input over the limit: %d %s", r.status, r.raw)
	}
	r := s.do("POST", "/runs", `{"workflow":"wf","input":{"k":1}}`)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.raw)
	}
	run := r.body["run"].(map[string]any)["id"].(string)
	r = s.do("POST", "/steps/claim", `{"worker_id":"w1","wait_ms":2000}`)
	lease := r.body["leases"].([]any)[0].(map[string]any)["id"].(string)
	if r := s.do("POST", "/steps/"+lease+"/complete", `{"output":`+str(limit+1)+`}`); r.status != 422 || !strings.Contains(r.raw, "body.output") {
		t.Fatalf("output over the limit: %d %s", r.status, r.raw)
	}
	if r := s.do("POST", "/steps/"+lease+"/complete", `{"output":`+str(limit)+`}`); r.status != 200 {
		t.Fatalf("output at the limit: %d %s", r.status, r.raw)
	}
	r = s.do("GET", "/runs/"+run, "")
	out := r.body["steps"].([]any)[0].(map[string]any)["output"].(map[string]any)["$cairn_payload"].(map[string]any)
	sha := out["sha256"].(string)
	if out["bytes"].(float64) != limit {
		t.Fatalf("reference %v", out)
	}
	if r := s.do("GET", "/runs/"+run+"/payloads/"+sha, ""); r.status != 200 || r.raw != str(limit) || r.ctype != "application/json" {
		t.Fatalf("payload: %d %s %.40s", r.status, r.ctype, r.raw)
	}
	if r := s.do("GET", "/steps/"+lease+"/payloads/"+sha, ""); r.status != 200 || r.raw != str(limit) {
		t.Fatalf("lease payload: %d %.40s", r.status, r.raw)
	}
	if r := s.do("GET", "/runs/"+run+"/payloads/"+strings.Repeat("0", 64), ""); r.status != 404 {
		t.Fatalf("unknown payload: %d %s", r.status, r.raw)
	}
	if r := s.do("GET", "/runs/"+run+"/payloads/XYZ", ""); r.status != 422 || !strings.Contains(r.raw, "sha256") {
		t.Fatalf("bad hash: %d %s", r.status, r.raw)
	}
}
