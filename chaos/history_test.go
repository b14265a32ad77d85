package chaos

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestRecorderLogsTheInvocationFirst: the invocation of a worker call is
// on file before the request reaches the server, so a worker killed
// while the call is in flight still leaves it in the history (the cause
// of seed 447662497's non-linearizable history), and the answered call
// is recorded under the same sequence number.
func TestRecorderLogsTheInvocationFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seenByServer []Call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls, err := readLines[Call](path)
		if err != nil {
			t.Error(err)
		}
		seenByServer = calls
		w.WriteHeader(409)
		w.Write([]byte(`{"reason":"fenced"}`))
	}))
	defer srv.Close()
	c := &http.Client{Transport: &recorder{next: http.DefaultTransport, worker: "w1", f: f}}
	res, err := c.Post(srv.URL+"/v1/api/steps/L/complete", "application/json", bytes.NewReader([]byte(`{"output":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(seenByServer) != 1 || !seenByServer[0].Pending || seenByServer[0].Seq != 1 || seenByServer[0].Path != "/steps/L/complete" {
		t.Fatalf("while the call was in flight the history held %+v, want its invocation line", seenByServer)
	}
	calls, err := readLines[Call](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[1].Pending || calls[1].Seq != 1 || calls[1].Status != 409 {
		t.Fatalf("after the answer the history held %+v, want the invocation and the answered call", calls)
	}
	if got := resolvePending(calls); len(got) != 1 || got[0].Status != 409 {
		t.Fatalf("resolved: %+v, want the answered call once", got)
	}
	if got := resolvePending(calls[:1]); len(got) != 1 || got[0].Status != 0 || got[0].End != 1<<63-1 {
		t.Fatalf("resolved without its answer: %+v, want one unanswered call", got)
	}
}
