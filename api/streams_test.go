package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/blob/mem"
)

// sseEvent is one Server-Sent Event as a test reads it.
type sseEvent struct {
	name, id, data string
}

// openStream opens run's stream from lastID and returns its events, read
// as they come, and the answer's status.
func (s *server) openStream(ctx context.Context, run, lastID string) (<-chan sseEvent, int) {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/runs/"+run+"/stream", nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	out := make(chan sseEvent, 64)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			k, v, _ := strings.Cut(line, ": ")
			switch {
			case line == "":
				if ev.name != "" {
					out <- ev
				}
				ev = sseEvent{}
			case k == "event":
				ev.name = v
			case k == "id":
				ev.id = v
			case k == "data":
				ev.data = v
			}
		}
	}()
	return out, res.StatusCode
}

// next is the next event of c other than the names skipped, or fails.
func next(t *testing.T, c <-chan sseEvent, skip ...string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-c:
			if !ok {
				t.Fatal("the stream closed")
			}
			if !contains(skip, ev.name) {
				return ev
			}
		case <-timeout:
			t.Fatal("no event within 10s")
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A run's stream carries its status, journal and a step's progress, ends
// with the run, and resumes from Last-Event-ID; progress is refused for a
// lease that is not one, naming the field.
func TestRunStream(t *testing.T) {
	stores := map[string]func(t *testing.T) *blob.Bucket{
		"mem": func(*testing.T) *blob.Bucket { return mem.New() },
		"file": func(t *testing.T) *blob.Bucket {
			b, err := file.New(t.TempDir(), file.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { testRunStream(t, newServerOn(t, open(t), api.Config{DevMode: true})) })
	}
}

func testRunStream(t *testing.T, s *server) {
	register(s, `{"name":"one","version":"1","steps":[{"id":"a"}]}`)
	run := s.do("POST", "/runs", `{"workflow":"one"}`).body["run"].(map[string]any)["id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, status := s.openStream(ctx, run, "")
	if status != 200 {
		t.Fatalf("stream: %d", status)
	}
	first := next(t, events, "journal")
	if first.name != "status" || !strings.Contains(first.data, `"status":"running"`) {
		t.Fatalf("first event %+v, want the running status", first)
	}
	// A stream with nothing to send yet answers its headers at once: its
	// client knows it is open (and its progress subscribed).
	hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
	defer hcancel()
	if _, status := s.openStream(hctx, run, first.id); status != 200 {
		t.Fatalf("a stream from %s: %d", first.id, status)
	}
	c := s.do("POST", "/steps/claim", `{"worker_id":"w1","max":1,"wait_ms":1000}`)
	lease := c.body["leases"].([]any)[0].(map[string]any)["id"].(string)
	for _, v := range []string{`1`, `{"done":0.5}`} {
		if r := s.do("POST", "/steps/"+lease+"/progress", `{"value":`+v+`}`); r.status != 204 {
			t.Fatalf("progress: %d %s", r.status, r.raw)
		}
		ev := next(t, events, "journal", "status")
		var p struct {
			Step    string          `json:"step"`
			Attempt int             `json:"attempt"`
			Value   json.RawMessage `json:"value"`
		}
		if json.Unmarshal([]byte(ev.data), &p); ev.name != "progress" || p.Step != "a" || p.Attempt != 1 || string(p.Value) != v || ev.id != "" {
			t.Fatalf("event %+v, want progress %s without an id", ev, v)
		}
	}
	forged := lease[:len(lease)-4] + "AAAA"
	if r := s.do("POST", "/steps/"+forged+"/progress", `{"value":1}`); r.status/100 != 4 || !strings.Contains(r.raw, "lease") {
		t.Errorf("forged lease: %d %s, want a 4xx naming the lease", r.status, r.raw)
	}
	if r := s.do("POST", "/steps/"+lease+"/progress", `{"value":"`+strings.Repeat("x", 17<<10)+`"}`); r.status/100 != 4 {
		t.Errorf("oversized progress: %d %s", r.status, r.raw)
	}
	s.do("POST", "/steps/"+lease+"/complete", `{"output":2}`)
	var last sseEvent
	for last.name != "end" {
		last = next(t, events, "progress")
	}
	if !strings.Contains(last.data, `"status":"completed"`) || last.id == "" {
		t.Fatalf("end event %+v", last)
	}
	if _, ok := <-events; ok {
		t.Fatal("the stream did not close after end")
	}
	// Resumed after the end: only the end again (nothing new).
	again, _ := s.openStream(ctx, run, last.id)
	if ev := next(t, again); ev.name != "end" {
		t.Fatalf("resumed stream: %+v, want end", ev)
	}
	// Resumed before the claim: the journal entries after it.
	again, _ = s.openStream(ctx, run, "1.1")
	if ev := next(t, again); ev.name != "journal" || !strings.Contains(ev.data, `"seq":2`) {
		t.Fatalf("resumed at 1.1: %+v, want journal entry 2", ev)
	}
	// The journal entries a stream sends before its first status have ids
	// of rev -1 (no status yet): resumed from one, the entries after it,
	// then the status.
	if first.id == "" || strings.HasPrefix(first.id, "-1.") {
		t.Fatalf("the first status's id %q", first.id)
	}
	again, _ = s.openStream(ctx, run, "-1.1")
	if ev := next(t, again); ev.name != "journal" || ev.id != "-1.2" {
		t.Fatalf("resumed at -1.1: %+v, want journal entry 2 (id -1.2)", ev)
	}
	if ev := next(t, again, "journal"); ev.name != "status" {
		t.Fatalf("resumed at -1.1: %+v, want the status", ev)
	}
	if r := s.do("GET", "/runs/"+run+"/stream", ""); r.status != 200 {
		t.Fatalf("stream of an ended run: %d", r.status)
	}
	r := s.doWith("GET", "/runs/"+run+"/stream", "", map[string]string{"Last-Event-ID": "bogus"})
	var prob struct {
		Errors []struct{ Location string } `json:"errors"`
	}
	json.Unmarshal([]byte(r.raw), &prob)
	if r.status != 422 || len(prob.Errors) != 1 || prob.Errors[0].Location != "header.Last-Event-ID" {
		t.Fatalf("bad Last-Event-ID: %d %+v", r.status, prob)
	}
}
