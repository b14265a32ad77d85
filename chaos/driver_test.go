package chaos

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Proxy modes of TestDriverResolvesWhatGaveUp.
const (
	pass         = iota
	loseStarts   // starts reach the server; their answers are lost (502)
	refuseStarts // starts are answered 502 without reaching the server
	refuseEvents // events are answered 502 without reaching the server
)

// TestDriverResolvesWhatGaveUp: a start whose retries give up is not
// taken for failed. After the chaos the driver looks its run up by the
// idempotency key — finding the run a start whose answer was lost created,
// or creating the run no start reached the server with — and sends the
// event it owes; an event that gave up is sent again. Every run then ends,
// and the server holds exactly one run per job.
func TestDriverResolvesWhatGaveUp(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mode atomic.Int32
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			start := req.URL.Path == "/v1/api/runs"
			event := strings.HasSuffix(req.URL.Path, "/events")
			switch m := mode.Load(); {
			case start && m == loseStarts:
				rp.ServeHTTP(httptest.NewRecorder(), req) // applied; the answer is lost
				http.Error(w, "lost", http.StatusBadGateway)
				return
			case start && m == refuseStarts, event && m == refuseEvents:
				http.Error(w, "refused", http.StatusBadGateway)
				return
			}
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(proxy.Close)

	direct, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	viaProxy, err := sdk.NewClient(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}

	// A chaos worker serves the workflows, straight to the server.
	el, err := openExecLog(filepath.Join(t.TempDir(), "executions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := sdk.NewWorker(direct, sdk.WithName("w"), sdk.WithConcurrency(4),
		sdk.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))).Register(defs(el, "w")...)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); w.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-served })
	// Ready: the worker registered its workflows and claims.
	select {
	case <-w.Ready():
	case <-served:
		t.Fatal("the worker stopped before it was ready")
	case <-time.After(30 * time.Second):
		t.Fatal("the worker was not ready within 30 s")
	}
	if wfs, err := direct.Workflows(ctx); err != nil || len(wfs) != len(Workflows) {
		t.Fatalf("the ready worker registered %v (%v), want the %d chaos workflows", wfs, err, len(Workflows))
	}
	countRuns := func() int {
		n := 0
		for _, err := range direct.Runs(ctx, sdk.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}

	r := &round{
		cfg:  Config{StartGiveUp: time.Second, DrainTimeout: time.Minute},
		rep:  &Report{Kills: map[Kind]int{}, Pauses: map[Kind]int{}, ByStatus: map[cairn.RunStatus]int{}, ByWorkflow: map[string]int{}},
		runs: map[string]string{}, eventOf: map[string]string{},
		client: []*sdk.Client{viaProxy},
	}
	wait := func(key string) job {
		return job{wf: WfWait, in: Input{WorkMs: 5}, key: key, c: viaProxy, other: viaProxy, event: true}
	}

	mode.Store(loseStarts)
	r.drive(wait("lost-answer"))
	if n := countRuns(); n != 1 {
		t.Fatalf("after the start whose answers were lost: %d runs on the server, want 1", n)
	}
	mode.Store(refuseStarts)
	r.drive(wait("refused"))
	if n := countRuns(); n != 1 {
		t.Fatalf("after the refused start: %d runs on the server, want 1", n)
	}
	mode.Store(refuseEvents)
	r.drive(wait("event-refused"))
	mode.Store(pass)
	if len(r.runs) != 1 || len(r.late) != 3 {
		t.Fatalf("before resolving: %d runs answered, %d jobs late; want 1 and 3", len(r.runs), len(r.late))
	}

	r.resolveLate(ctx)
	if len(r.rep.Failures) > 0 {
		t.Fatalf("failures: %v", r.rep.Failures)
	}
	if r.rep.LateFound != 1 || r.rep.LateCreated != 1 || r.rep.LateSends != 1 {
		t.Errorf("late: found=%d created=%d sends=%d, want 1 each", r.rep.LateFound, r.rep.LateCreated, r.rep.LateSends)
	}
	if n := countRuns(); n != 3 || len(r.runs) != 3 {
		t.Fatalf("after resolving: %d runs on the server, %d known to the driver; want 3 and 3", n, len(r.runs))
	}
	if got := r.events.Load(); got != 3 {
		t.Errorf("events accepted: %d, want 3", got)
	}
	r.drain(ctx)
	for id := range r.runs {
		st, err := direct.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != cairn.RunCompleted {
			t.Errorf("run %s is %s, want completed: %s", id, st.Status, stepsSummary(&st.Run))
		}
	}
}
