package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/cairn-dev/cairn/internal/testutil"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
)

// syncBuffer is a log sink safe for concurrent writers and readers.
type syncBuffer = testutil.SyncBuffer

// newTestAPI is an API on a fresh engine over store (mem when nil), in dev
// mode, logging to the returned buffer.
func newTestAPI(t *testing.T, store *blob.Bucket) (*API, *syncBuffer) {
	t.Helper()
	if store == nil {
		store = mem.New()
	}
	e, err := engine.New(store, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	logs := &syncBuffer{}
	return New(e, Config{DevMode: true, Logger: slog.New(slog.NewTextHandler(logs, nil))}), logs
}

// serve sends one request through the API's handler.
func serve(a *API, req *http.Request) *httptest.ResponseRecorder {
	if req.Body != nil && req.Body != http.NoBody {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	return rec
}

func wantProblem(t *testing.T, rec *httptest.ResponseRecorder, status int) map[string]any {
	t.Helper()
	if rec.Code != status || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/problem+json") {
		t.Fatalf("got %d %q, want %d problem+json: %s", rec.Code, rec.Header().Get("Content-Type"), status, rec.Body)
	}
	var p map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p["status"] != float64(status) {
		t.Fatalf("not a problem of status %d: %s", status, rec.Body)
	}
	return p
}

// Store errors the request caused are 4xx: retrying cannot help, so a 502
// ("the store failed, retry") would lie.
func TestStoreErrorsTheClientCausedAre4xx(t *testing.T) {
	a, _ := newTestAPI(t, nil)
	ctx := context.Background()
	for _, c := range []struct {
		err    error
		status int
	}{
		{&blob.Error{Op: "get", Key: "leases/../a/000001", Err: blob.ErrInvalidArgument}, 404},
		{&blob.Error{Op: "stat", Key: "x/", Err: blob.ErrInvalidArgument}, 404},
		{&blob.Error{Op: "create", Key: "x//y", Err: blob.ErrInvalidArgument}, 400},
		{&blob.Error{Op: "list", Key: "runs/", Err: blob.ErrInvalidArgument}, 400},
		{&blob.Error{Op: "get", Key: "runs/x", Err: blob.ErrNotFound}, 404},
		{&blob.Error{Op: "get", Key: "runs/x", Err: errors.New("connection reset")}, 502},
		{&blob.Error{Op: "get", Key: "runs/x", Err: blob.ErrThrottled}, 503},
	} {
		var p *Problem
		if !errors.As(a.toProblem(ctx, c.err, nil), &p) || p.Status != c.status {
			t.Fatalf("%v: got %+v, want %d", c.err, p, c.status)
		}
	}

	// End to end: an edited lease id whose run is ".." is refused when it
	// is parsed, before any store call, as a malformed path.lease.
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"r":"..","s":"a","n":1,"w":"w1","t":1,"k":"AAAAAAAAAAAAAAAAAAAAAA"}`))
	rec := serve(a, httptest.NewRequest("POST", BasePath+"/steps/"+forged+"/heartbeat", nil))
	wantProblem(t, rec, 422)
	if !strings.Contains(rec.Body.String(), "path.lease") {
		t.Fatalf("the problem does not name path.lease: %s", rec.Body)
	}
}

// A body cut short is the request's fault: 400, where Huma says 500.
func TestTruncatedBodyIs400(t *testing.T) {
	a, _ := newTestAPI(t, nil)
	for _, path := range []string{"/runs", "/workers/register", "/steps/claim"} {
		body := io.MultiReader(strings.NewReader(`{"workflow":"w`), iotest.ErrReader(io.ErrUnexpectedEOF))
		rec := serve(a, httptest.NewRequest("POST", BasePath+path, body))
		wantProblem(t, rec, 400)
	}
}

// A connection whose context net/http has cancelled (a read error it saw
// in the background) gives every later request on it a cancelled
// context: the 503 that answers one closes the connection, so the
// client's retry comes on a new one and is served.
func TestCancelledConnectionIsClosed(t *testing.T) {
	a, _ := newTestAPI(t, nil)
	ts := httptest.NewUnstartedServer(a.Handler())
	var conns atomic.Int32
	ts.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		if conns.Add(1) > 1 {
			return ctx
		}
		dead, cancel := context.WithCancel(ctx)
		cancel() // the first connection is dead from the start
		return dead
	}
	ts.Start()
	t.Cleanup(ts.Close)
	c := ts.Client()
	get := func() *http.Response {
		t.Helper()
		res, err := c.Get(ts.URL + BasePath + "/store/ns/k")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	if res := get(); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !res.Close {
		t.Fatalf("on a cancelled connection: %d, Retry-After %q, close %v; want a 503 that closes it", res.StatusCode, res.Header.Get("Retry-After"), res.Close)
	}
	if res := get(); res.StatusCode != http.StatusNotFound {
		t.Fatalf("the retry: %d, want 404 (no such key) on a new connection", res.StatusCode)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}
