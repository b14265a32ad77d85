package api_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/api"
)

// An update over HTTP: 202 with Location while it is not answered, 200
// with the answer once it is (sent, or polled); what cannot be
// delivered is a 4xx naming the field, a retry with another body a 409.
func TestUpdatesOverHTTP(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	wf := `{"name":"up","version":"1","steps":[{"id":"a"},{"id":"w","kind":"wait","event":"approve","answer":"b","after":["a"]},{"id":"b","after":["w"]}]}`
	if r := register(s, wf); r.status != 200 {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	run := s.do("POST", "/runs", `{"workflow":"up"}`).body["run"].(map[string]any)["id"].(string)
	complete := func(output string) {
		c := s.do("POST", "/steps/claim", `{"worker_id":"w1","wait_ms":2000}`)
		id := c.body["leases"].([]any)[0].(map[string]any)["id"].(string)
		if r := s.do("POST", "/steps/"+id+"/complete", `{"output":`+output+`}`); r.status != 200 {
			t.Fatalf("complete: %d %s", r.status, r.raw)
		}
	}
	complete(`1`)
	for _, c := range []struct {
		name, body string
		status     int
		mention    string
	}{
		{"no wait takes it", `{"name":"aprove"}`, 422, `"location":"body.name"`},
		{"negative wait", `{"name":"approve","wait_ms":-1}`, 422, "wait_ms"},
		{"no name", `{}`, 422, "name"},
	} {
		if r := s.do("POST", "/runs/"+run+"/updates", c.body); r.status != c.status || !strings.Contains(r.raw, c.mention) {
			t.Errorf("%s: %d %s, want %d naming %s", c.name, r.status, r.raw, c.status, c.mention)
		}
	}
	if r := s.do("POST", "/runs/7YBQ8BJD03WTTD0XEM50YZFHTH/updates", `{"name":"approve"}`); r.status != 404 {
		t.Errorf("unknown run: %d %s", r.status, r.raw)
	}
	r := s.do("POST", "/runs/"+run+"/updates", `{"id":"u1","name":"approve","input":{"ok":1}}`)
	if loc := r.header.Get("Location"); r.status != 202 || loc != api.BasePath+"/runs/"+run+"/updates/u1" {
		t.Fatalf("an update not answered yet: %d, Location %q", r.status, loc)
	}
	if r := s.do("POST", "/runs/"+run+"/updates", `{"id":"u1","name":"approve","input":{"ok":2}}`); r.status != 409 {
		t.Errorf("the same id with another input: %d %s", r.status, r.raw)
	}
	complete(`"yes"`)
	if r := s.do("GET", "/runs/"+run+"/updates/u1?wait_ms=1000", ""); r.status != 200 || r.body["status"] != "answered" || r.body["answer"] != "yes" {
		t.Fatalf("polled once answered: %d %s", r.status, r.raw)
	}
	if r := s.do("POST", "/runs/"+run+"/updates", `{"id":"u1","name":"approve","input":{"ok":1}}`); r.status != 200 || r.body["answer"] != "yes" {
		t.Fatalf("sent again once answered: %d %s", r.status, r.raw)
	}
	if r := s.do("GET", "/runs/"+run+"/updates/nope", ""); r.status != 404 {
		t.Errorf("unknown update: %d %s", r.status, r.raw)
	}
	if r := s.do("POST", "/runs/"+run+"/updates", `{"name":"approve"}`); r.status != 409 {
		t.Errorf("an ended run: %d %s", r.status, r.raw)
	}
}
