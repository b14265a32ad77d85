package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
)

// fuzzOps are the operations FuzzAPI sends requests to. In path and query,
// "{id}" is the fuzzed id; in the body, "{{id}}" is the id as a JSON
// string. "{{run}}" and "{{lease}}" are a real run and lease of the
// fuzzed server, in ids and bodies alike, and "{{fnlease}}" a lease of a
// durable function's step (checkpoint's seeds use it).
var fuzzOps = []struct{ method, path string }{
	{"POST", "/workers/register"},
	{"POST", "/steps/claim"},
	{"POST", "/steps/{id}/started"},
	{"POST", "/steps/{id}/heartbeat"},
	{"POST", "/steps/heartbeat"},
	{"POST", "/steps/{id}/complete"},
	{"POST", "/steps/{id}/fail"},
	{"POST", "/steps/{id}/checkpoint"},
	{"POST", "/runs"},
	{"GET", "/runs/{id}"},
	{"GET", "/runs?{id}"},
	{"POST", "/runs/{id}/events"},
	{"POST", "/runs/{id}/cancel"},
	{"GET", "/runs/{id}/journal"},
	{"GET", "/runs/{id}/status?wait_ms=50&after=99"},
	{"GET", "/workflows/{id}/versions/1"},
	{"GET", "/workflows/wf/versions/{id}"},
	{"GET", "{id}"}, // any path at all
}

// fuzzSeeds are bodies for each operation, with the id in them.
var fuzzSeeds = map[string][]string{
	"/workers/register": {
		`{"worker_id":{{id}},"workflows":[` + fuzzWorkflow + `]}`,
		`{"workflows":[]}`,
		`{"worker_id":"w1","workflows":[{"name":{{id}},"version":"1","steps":[{"id":"a"}]}]}`,
	},
	"/steps/claim": {
		`{"worker_id":{{id}},"wait_ms":10}`,
		`{"worker_id":"w1","run":{{id}},"wait_ms":10}`,
		`{"worker_id":"w1","max":100,"wait_ms":3600000}`,
	},
	"/steps/heartbeat":     {`{"leases":[{{id}},"{{lease}}"]}`},
	"/steps/{id}/complete": {`{"output":{{id}},"state_patch":{"k":1},"usage":{"model":{{id}},"input_tokens":1}}`},
	"/steps/{id}/fail": {
		`{"error":{"class":{{id}},"message":"x"}}`,
		`{"error":{"class":"retryable","message":{{id}}}}`,
	},
	"/steps/{id}/checkpoint": {
		`{"operations":[{"id":{{id}},"seq":0,"kind":"step","status":"completed","result":1}]}`,
		`{"operations":[{"id":"/a#0","seq":0,"kind":{{id}},"status":{{id}},"result":{{id}},"wake_at":{{id}}}]}`,
		`{"operations":[{"id":"/a#0","seq":-1,"kind":"step","status":"failed"}]}`,
		`{"operations":[{"id":"/a#0","seq":99999999999,"kind":"sleep","status":"completed"}]}`,
		`{"operations":[],"suspend":{"op":{{id}},"event":{{id}},"invoke":{"workflow":{{id}}}}}`,
		`{"operations":[],"suspend":{"event":{{id}}}}`,
		`{"operations":[],"suspend":{"op":"/x#0","invoke":{"workflow":"wf","input":{{id}}},"until":{{id}}}}`,
	},
	"/runs": {
		`{"workflow":{{id}}}`,
		`{"workflow":"wf","version":{{id}},"idempotency_key":{{id}}}`,
		`{"workflow":"wf","input":{"n":1},"deadline":"2000-01-01T00:00:00Z"}`,
	},
	"/runs/{id}/events": {`{"name":{{id}},"id":{{id}},"payload":1}`, `{"name":"go"}`},
	"/runs/{id}/cancel": {`{"reason":{{id}}}`},
}

// fuzzBadBodies are malformed bodies seeded into every operation.
var fuzzBadBodies = []string{"{", `{"x":`, "null", "[]", `{"bogus":1}`, "\xff", `{"a":"\ud800"}`}

const fuzzWorkflow = `{"name":"wf","version":"1","steps":[{"id":"a"},{"id":"w","kind":"wait","event":"go","after":["a"]},{"id":"b","after":["w"],"input":{"x":"${steps.a.output}"}}]}`

// fuzzIDs are the ids seeded into every operation: the nasty ones of
// TestInvalidIDsAreNamed4xx's kind, and real ones.
var fuzzIDs = []string{
	"", ".", "..", "a/b", "a//b", "/a", "a/", "../x", "a/../b", "%2e%2e", "%2F", "a%00b",
	"a\x00b", "a\r\nb", "a\nb", "a\tb", "\x7f", "\xff", "a\xc3", "a b", "é",
	strings.Repeat("A", 3000), "{{run}}", "{{lease}}", "{{fnlease}}", "w1", "wf",
	"cursor=..&limit=1", "cursor=AAAA", "workflow=%00&status=weird", "limit=0", "limit=1",
	"/v1/api/runs/./x", "/v1/api//runs", "/v1/api/runs/%2e", "/nope", "/openapi.json",
}

// FuzzAPI sends fuzzed ids and bodies to the worker and run operations
// through the real handler. Whatever arrives, the answer is never a 5xx
// other than 503, never a panic (the handler would answer 500), never a
// hang, and every error is problem JSON.
//
//	go test -run '^$' -fuzz FuzzAPI -fuzztime 3m ./api/
func FuzzAPI(f *testing.F) {
	for op, o := range fuzzOps {
		bodies := fuzzSeeds[o.path]
		if bodies == nil {
			bodies = []string{""}
		}
		for _, body := range bodies {
			if !strings.Contains(o.path, "{id}") && !strings.Contains(body, "{{id}}") {
				f.Add(uint8(op), "", body) // the id goes nowhere
				continue
			}
			for _, id := range fuzzIDs {
				f.Add(uint8(op), id, body)
			}
		}
		for _, body := range fuzzBadBodies {
			f.Add(uint8(op), "{{run}}", body)
			f.Add(uint8(op), "{{lease}}", body)
			f.Add(uint8(op), "{{fnlease}}", body)
		}
		f.Add(uint8(op)|0x40, "{{run}}", bodies[0]) // cut short
		f.Add(uint8(op)|0x80, "..", bodies[0])      // the id raw in the path
	}
	a, run, lease, fnlease := fuzzServer(f)
	h := a.Handler()
	f.Fuzz(func(t *testing.T, op uint8, id, body string) {
		o := fuzzOps[int(op)%len(fuzzOps)]
		fill := strings.NewReplacer("{{run}}", run, "{{lease}}", lease, "{{fnlease}}", fnlease)
		id = fill.Replace(id)
		body = fill.Replace(strings.ReplaceAll(body, "{{id}}", jsonQuote(id)))
		var target string
		switch {
		case o.path == "{id}":
			target = "/" + strings.TrimPrefix(id, "/")
		case strings.Contains(o.path, "?{id}"):
			target = BasePath + strings.Replace(o.path, "{id}", id, 1)
		default:
			// Escaped, as a client sends an id; op's bit 7 sends it raw.
			seg := url.PathEscape(id)
			if op&0x80 != 0 {
				seg = id
			}
			target = BasePath + strings.Replace(o.path, "{id}", seg, 1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var r io.Reader = strings.NewReader(body)
		if op&0x40 != 0 { // the body breaks off: a client gone mid-request
			r = io.MultiReader(r, iotest.ErrReader(io.ErrUnexpectedEOF))
		}
		req, err := http.NewRequestWithContext(ctx, o.method, "http://cairn.test"+target, r)
		if err != nil {
			return // not a URL a client could send
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, req)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s %s %q: no answer in 5 s", o.method, target, body)
		}
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: %d %s", o.method, target, body, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); rec.Code >= 400 && !strings.HasPrefix(ct, "application/problem+json") {
			t.Fatalf("%s %s %q: %d with content type %q: %s", o.method, target, body, rec.Code, ct, rec.Body)
		}
	})
}

// fuzzServer is an API whose worker w1 serves wf and the function fn,
// with a run and a lease of wf and a lease of fn. Holds are short: a fuzzed claim or status poll waits 200 ms at
// most.
func fuzzServer(f *testing.F) (a *API, run, lease, fnlease string) {
	e, err := engine.New(mem.New(), engine.Config{MaxRequestTime: 250 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	// Errors only: what the API logs at that level is what fails the
	// fuzz target (a 500, a 502, a panic), so it is the clue.
	a = New(e, Config{DevMode: true, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	call := func(method, path, body string, out any) {
		req := httptest.NewRequest(method, BasePath+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, req)
		if rec.Code >= 300 || json.Unmarshal(rec.Body.Bytes(), out) != nil {
			f.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	var reg struct{}
	var started struct {
		Run struct{ ID string }
	}
	call("POST", "/workers/register", `{"worker_id":"w1","workflows":[`+fuzzWorkflow+`,{"name":"fn","version":"1","steps":[{"id":"main","kind":"function"}]}]}`, &reg)
	call("POST", "/runs", `{"workflow":"wf"}`, &started)
	var claimed struct{ Leases []struct{ ID string } }
	call("POST", "/steps/claim", `{"worker_id":"w1","wait_ms":1000}`, &claimed)
	if len(claimed.Leases) != 1 {
		f.Fatalf("setup claim: %+v", claimed)
	}
	lease = claimed.Leases[0].ID
	var fn struct {
		Run struct{ ID string }
	}
	call("POST", "/runs", `{"workflow":"fn"}`, &fn)
	call("POST", "/steps/claim", `{"worker_id":"w1","run":"`+fn.Run.ID+`","wait_ms":1000}`, &claimed)
	if len(claimed.Leases) != 1 {
		f.Fatalf("setup claim of the function: %+v", claimed)
	}
	return a, started.Run.ID, lease, claimed.Leases[0].ID
}
