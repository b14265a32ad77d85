package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
)

type fixture struct {
	t  testing.TB
	e  *engine.Engine
	ts *httptest.Server
}

func newFixture(t testing.TB, cfg api.Config) *fixture {
	e, err := engine.New(mem.New(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ts := httptest.NewServer(api.New(e, cfg).Handler())
	t.Cleanup(ts.Close)
	return &fixture{t: t, e: e, ts: ts}
}

func (f *fixture) get(path, key string) (int, string, http.Header) {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", f.ts.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

// workflow "wf": fetch → (flaky, approve: a wait) → done.
func (f *fixture) register() {
	f.t.Helper()
	wf := cairn.Workflow{Name: "wf", Version: "2", Steps: []cairn.Step{
		{ID: "fetch"},
		{ID: "flaky", After: []string{"fetch"}, Retry: &cairn.RetryPolicy{MaxAttempts: 3, InitialBackoff: cairn.Duration(time.Millisecond)}},
		{ID: "approve", Kind: cairn.KindWait, Event: "approved", After: []string{"fetch"}},
		{ID: "done", After: []string{"flaky", "approve"}},
	}}
	f.registerFor("w1", wf)
}

func (f *fixture) claim(run string) cairn.Lease {
	f.t.Helper()
	ctx := context.Background()
	// A held claim (the engine's long poll) picks up a retry once its 1ms
	// backoff passes; it may answer empty early: claim again.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ls, err := f.e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Run: run, WaitMs: time.Until(deadline).Milliseconds()})
		if err != nil {
			f.t.Fatal(err)
		}
		if len(ls) == 1 {
			return ls[0]
		}
	}
	f.t.Fatalf("nothing to claim of run %s within 5 s", run)
	return cairn.Lease{}
}

// startRun runs fetch (its output holds a script tag) and fails flaky's
// first attempt, leaving the run with approve waiting.
func (f *fixture) startRun() string {
	f.t.Helper()
	ctx := context.Background()
	r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "wf", Correlation: "order-<b>7</b>"})
	if err != nil {
		f.t.Fatal(err)
	}
	id := r.Run.ID
	l := f.claim(id)
	if _, err := f.e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`{"html":"<script>alert(1)</script>"}`),
		Usage: &cairn.Usage{InputTokens: 10, OutputTokens: 5}}); err != nil {
		f.t.Fatal(err)
	}
	l = f.claim(id)
	if l.Step != "flaky" {
		f.t.Fatalf("claimed %s, want flaky", l.Step)
	}
	if _, err := f.e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "retryable", Message: "upstream <i>503</i>"}}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func TestPagesInDevMode(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.register()
	id := f.startRun()

	if st, _, h := f.get("/", ""); st != http.StatusFound || h.Get("Location") != "/ui/" {
		t.Fatalf("/: %d %q, want a redirect to /ui/", st, h.Get("Location"))
	}
	st, body, h := f.get("/ui/", "")
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("runs page: %d %s", st, h.Get("Content-Type"))
	}
	for _, want := range []string{`data-run="` + id + `"`, "wf@2", ">running<", "1/4", "order-&lt;b&gt;7&lt;/b&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("runs page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>7</b>") {
		t.Error("runs page renders a correlation as HTML")
	}

	st, body, _ = f.get("/ui/runs/"+id, "")
	if st != 200 {
		t.Fatalf("run page: %d %s", st, body)
	}
	if strings.Contains(body, "<script>alert(1)</script>") || strings.Contains(body, "<i>503</i>") {
		t.Fatal("run page renders a step's output or error as HTML")
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;", // the output, as text
		"upstream &lt;i&gt;503&lt;/i&gt;",
		`data-step="fetch" data-attempt="1" data-kind="attempt" data-outcome="completed"`,
		`data-step="flaky" data-attempt="1" data-kind="attempt" data-outcome="failed"`,
		`data-step="approve" data-attempt="0" data-kind="wait"`,
		`<g class="node s-waiting" data-step="approve"`,
		`<g class="node s-pending" data-step="done"`,
		`id="cancel-run"`, `data-live="true"`, "wait_started",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %s", want)
		}
	}
	// The read is audited like the API's.
	objs, err := f.e.Store().ListAll(context.Background(), "audit/")
	if err != nil || len(objs) != 1 {
		t.Fatalf("audit records: %d, %v", len(objs), err)
	}

	if st, body, _ = f.get("/ui/workers", ""); st != 200 || !strings.Contains(body, `data-worker="w1" data-alive="true"`) || !strings.Contains(body, "wf@2") {
		t.Fatalf("workers page: %d %s", st, body)
	}
	for path, want := range map[string]int{
		"/ui/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV": 404, "/ui/runs/bad!id": 422, "/ui/nothing": 404,
		"/ui/?status=bogus": 422, "/ui/?cursor=%00": 422, "/ui/assets/app.js": 200, "/ui/assets/app.css": 200,
	} {
		if st, body, _ := f.get(path, ""); st != want {
			t.Errorf("%s: %d, want %d: %.200s", path, st, want, body)
		}
	}
	// A query that is a run id shows that run; another is a correlation.
	if _, body, _ = f.get("/ui/?q="+id, ""); !strings.Contains(body, `data-run="`+id+`"`) {
		t.Error("search by run id does not find the run")
	}
	if _, body, _ = f.get("/ui/?q=order-%3Cb%3E7%3C%2Fb%3E", ""); !strings.Contains(body, `data-run="`+id+`"`) {
		t.Error("search by correlation does not find the run")
	}
	if _, body, _ = f.get("/ui/?q=nope", ""); strings.Contains(body, `data-run="`+id+`"`) {
		t.Error("search for another correlation lists the run")
	}
}

func TestPagesNeedAKey(t *testing.T) {
	keys, err := auth.ParseKeys("reader:read:" + auth.HashSecret("r-secret") + ",runner:read+execute:" + auth.HashSecret("x-secret") + ",worker:worker:" + auth.HashSecret("w-secret"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, api.Config{Keys: keys})
	f.register()
	id := f.startRun()
	for _, p := range []string{"/ui/", "/ui/runs/" + id, "/ui/workers", "/ui/events"} {
		st, body, h := f.get(p, "")
		if st != 401 || !strings.Contains(body, `id="key-form"`) || h.Get("WWW-Authenticate") == "" || strings.Contains(body, id+`"`) && p != "/ui/runs/"+id {
			t.Errorf("%s without a key: %d", p, st)
		}
		if st, _, _ := f.get(p, "w-secret"); st != 403 {
			t.Errorf("%s with a worker key: %d, want 403", p, st)
		}
		if st, _, _ := f.get(p, "r-secret"); st != 200 {
			t.Errorf("%s with a read key: %d", p, st)
		}
	}
	// Actions only for a key that may execute.
	if _, body, _ := f.get("/ui/runs/"+id, "r-secret"); strings.Contains(body, `id="cancel-run"`) {
		t.Error("a read key is offered cancel")
	}
	if _, body, _ := f.get("/ui/runs/"+id, "x-secret"); !strings.Contains(body, `id="cancel-run"`) {
		t.Error("an execute key is not offered cancel")
	}
	if _, body, _ := f.get("/ui/events", "r-secret"); strings.Contains(body, `id="publish-form"`) {
		t.Error("a read key is offered publishing")
	}
	if _, body, _ := f.get("/ui/events", "x-secret"); !strings.Contains(body, `id="publish-form"`) {
		t.Error("an execute key is not offered publishing")
	}
	// Assets need no key: they hold no data.
	if st, _, _ := f.get("/ui/assets/app.js", ""); st != 200 {
		t.Errorf("app.js: %d", st)
	}
}

// A ready step no live worker serves gets a banner once it has waited
// longer than the claim fallback interval.
func TestBannerWhenNoWorkerServes(t *testing.T) {
	clock := time.Now()
	e, err := engine.New(mem.New(), engine.Config{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ts := httptest.NewServer(api.New(e, api.Config{DevMode: true}).Handler())
	t.Cleanup(ts.Close)
	f := &fixture{t: t, e: e, ts: ts}
	f.register()
	r, err := e.StartRun(context.Background(), cairn.StartRequest{Workflow: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	if _, body, _ := f.get("/ui/runs/"+r.Run.ID, ""); strings.Contains(body, "No live worker") {
		t.Fatal("banner while the worker is alive")
	}
	clock = clock.Add(2*engine.WorkerRefreshEvery + 30*time.Minute) // w1 is no longer alive (the alive window passed); fetch has been ready since
	_, body, _ := f.get("/ui/runs/"+r.Run.ID, "")
	if !strings.Contains(body, "No live worker serves wf@2: step fetch is ready") {
		t.Fatalf("no banner: %s", body)
	}
	if _, body, _ = f.get("/ui/", ""); !strings.Contains(body, "No live worker serves wf@2") {
		t.Fatal("no banner on the runs page")
	}
}

// Paging: a filter that thins the listing still fills the first page.
func TestRunsPageFillsFilteredPage(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.register()
	other := cairn.Workflow{Name: "other", Version: "1", Steps: []cairn.Step{{ID: "a"}}}
	if _, err := f.e.Register(context.Background(), cairn.RegisterRequest{WorkerID: "w2", Workflows: []cairn.Workflow{other}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		if _, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "other"}); err != nil {
			t.Fatal(err)
		}
	}
	_, body, _ := f.get("/ui/?workflow=wf", "")
	if !strings.Contains(body, `data-run="`+r.Run.ID+`"`) || strings.Count(body, "<tr data-run=") != 1 {
		t.Fatalf("filtered page does not hold the one run of wf")
	}
	_, body, _ = f.get("/ui/", "")
	if n := strings.Count(body, "<tr data-run="); n != 50 || !strings.Contains(body, `rel="next"`) {
		t.Fatalf("first page: %d rows", n)
	}
}

// BenchmarkRunPage renders the page of a run with n steps (all
// completed, one attempt each): server time per render.
func BenchmarkRunPage(b *testing.B) {
	for _, n := range []int{10, 200} {
		b.Run(fmt.Sprint(n, "steps"), func(b *testing.B) {
			f := newFixture(b, api.Config{DevMode: true})
			id := f.completedRun(n)
			h := api.New(f.e, api.Config{DevMode: true}).Handler()
			b.ResetTimer()
			for range b.N {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/runs/"+id, nil))
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
			if per := b.Elapsed() / time.Duration(b.N); n == 200 && per > 300*time.Millisecond {
				b.Errorf("a 200-step run page renders in %v, over the 300ms budget", per)
			}
		})
	}
}

// completedRun runs a workflow of n steps (a chain with fan-out: step i
// depends on i-1 and i-7) to completion and returns its id.
func (f *fixture) completedRun(n int) string {
	ctx := context.Background()
	wf := cairn.Workflow{Name: fmt.Sprint("big", n), Version: "1"}
	for i := range n {
		s := cairn.Step{ID: fmt.Sprintf("s%03d", i)}
		if i > 0 {
			s.After = append(s.After, fmt.Sprintf("s%03d", i-1))
		}
		if i >= 7 {
			s.After = append(s.After, fmt.Sprintf("s%03d", i-7))
		}
		wf.Steps = append(wf.Steps, s)
	}
	f.registerFor("w1", wf)
	r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: wf.Name})
	if err != nil {
		f.t.Fatal(err)
	}
	for range n {
		l := f.claim(r.Run.ID)
		if _, err := f.e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`{"ok":true,"text":"some output of the step"}`),
			Usage: &cairn.Usage{Model: "m", InputTokens: 100, OutputTokens: 20}}); err != nil {
			f.t.Fatal(err)
		}
	}
	return r.Run.ID
}

// The API reference page loads its assets from the server, not a CDN.
func TestDocsServedOffline(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	st, body, _ := f.get("/docs", "")
	if st != 200 || !strings.Contains(body, `src="/docs/web-components.min.js"`) || strings.Contains(body, "https://") {
		t.Fatalf("/docs: %d %s", st, body)
	}
	for _, p := range []string{"/docs/web-components.min.js", "/docs/styles.min.css", "/docs/VERSION", "/openapi.yaml", "/docs/openapi.json"} {
		if st, body, _ := f.get(p, ""); st != 200 || len(body) < 100 {
			t.Errorf("%s: %d, %d bytes", p, st, len(body))
		}
	}
}

// The reference page's Try-It calls the server that serves the page, not
// the published document's first server (127.0.0.1:8080, the local
// default for generators): deployed on Lambda or Cloud Run it would call
// the reader's laptop.
func TestDocsTryItCallsItsOwnServer(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	_, page, _ := f.get("/docs", "")
	if !strings.Contains(page, `apiDescriptionUrl="/docs/openapi.json"`) {
		t.Fatalf("the page does not read /docs/openapi.json: %s", page)
	}
	var doc, published struct {
		Servers []struct{ URL string } `json:"servers"`
		Paths   map[string]any         `json:"paths"`
	}
	_, body, _ := f.get("/docs/openapi.json", "")
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" || len(doc.Paths) < 10 {
		t.Errorf("the page's document: servers %+v, %d paths; want only / and every path", doc.Servers, len(doc.Paths))
	}
	_, body, _ = f.get("/openapi.json", "")
	if err := json.Unmarshal([]byte(body), &published); err != nil {
		t.Fatal(err)
	}
	if len(published.Servers) == 0 || published.Servers[0].URL != "http://127.0.0.1:8080" || len(published.Paths) != len(doc.Paths) {
		t.Errorf("the published document changed: servers %+v, %d paths", published.Servers, len(published.Paths))
	}
}

// Every page links the icon, and browsers that ask /favicon.ico unasked
// get it rather than a 404.
func TestFavicon(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	st, body, h := f.get("/favicon.ico", "")
	if st != 200 || h.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(body, "<svg") {
		t.Fatalf("/favicon.ico: %d %s %.40s", st, h.Get("Content-Type"), body)
	}
	if _, page, _ := f.get("/ui/", ""); !strings.Contains(page, `<link rel="icon" href="/ui/assets/favicon.svg"`) {
		t.Errorf("the dashboard's pages do not link the icon")
	}
	if st, _, _ := f.get("/ui/assets/favicon.svg", ""); st != 200 {
		t.Errorf("/ui/assets/favicon.svg: %d", st)
	}
}

// A function step's operations are listed under it, results escaped and
// cut short, a failed one with its error.
func TestRunPageListsAFunctionsOperations(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.registerFor("w1", cairn.Workflow{Name: "fn", Version: "1", Steps: []cairn.Step{{ID: "main", Kind: cairn.KindFunction}}})
	ctx := context.Background()
	r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "fn"})
	if err != nil {
		t.Fatal(err)
	}
	l := f.claim(r.Run.ID)
	ops := []cairn.Operation{
		{ID: "/charge#0", Seq: 0, Kind: cairn.OpStep, Status: cairn.OpCompleted, Result: json.RawMessage(`"<b>ch_1</b>` + strings.Repeat("x", 200) + `"`)},
		{ID: "/ship#0", Seq: 1, Kind: cairn.OpStep, Status: cairn.OpFailed, Error: &cairn.ErrorInfo{Class: "no_stock", Message: "out of pens"}},
	}
	if _, err := f.e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: ops}); err != nil {
		t.Fatal(err)
	}
	_, body, _ := f.get("/ui/runs/"+r.Run.ID, "")
	for _, want := range []string{"2 operations of the function", `data-op="/charge#0"`, `&#34;\u003cb\u003ech_1\u003c/b\u003exxx`, "xxxx…</code>", "<b>no_stock</b>: out of pens"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q: %s", want, body[strings.Index(body, "operations of"):][:900])
		}
	}
	if strings.Contains(body, "<b>ch_1</b>") {
		t.Error("an operation's result is not escaped")
	}
}

// The run page shows a run's budget and each attempt's summary, escaped.
func TestRunPageShowsBudgetAndSummaries(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.registerFor("w1", cairn.Workflow{Name: "b", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "z", After: []string{"a"}}}})
	ctx := context.Background()
	r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "b", Budget: &cairn.Budget{Tokens: 500, Counters: map[string]int64{"searches": 3}}})
	if err != nil {
		t.Fatal(err)
	}
	l := f.claim(r.Run.ID)
	if _, err := f.e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Summary: json.RawMessage(`"read <i>3</i> pages"`)}); err != nil {
		t.Fatal(err)
	}
	_, body, _ := f.get("/ui/runs/"+r.Run.ID, "")
	for _, want := range []string{`<dd id="run-budget">500 tokens, searches=3</dd>`, `class="attempt-summary"`, `read \u003ci\u003e3\u003c/i\u003e pages`} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if strings.Contains(body, "<i>3</i>") {
		t.Error("a summary is not escaped")
	}
}

// The run page marks a step completed from its result cache, in the graph
// and in the steps' table, naming the run that computed the output.
func TestRunPageShowsACachedStep(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.registerFor("w1", cairn.Workflow{Name: "c", Version: "1", Steps: []cairn.Step{{ID: "get", Cache: &cairn.StepCache{}}}})
	ctx := context.Background()
	first, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "c", Input: json.RawMessage(`{"u": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Complete(ctx, f.claim(first.Run.ID).ID, cairn.CompleteRequest{Output: json.RawMessage(`"page"`)}); err != nil {
		t.Fatal(err)
	}
	// The entry is written just after the complete.
	var second *cairn.StartResult
	testutil.Eventually(t, 10*time.Second, "a run completed from the cache", func() (bool, string) {
		if second, err = f.e.StartRun(ctx, cairn.StartRequest{Workflow: "c", Input: json.RawMessage(`{"u": 1}`)}); err != nil {
			t.Fatal(err)
		}
		return second.Run.Status == cairn.RunCompleted, string(second.Run.Status)
	})
	_, body, _ := f.get("/ui/runs/"+second.Run.ID, "")
	for _, want := range []string{`class="cached"`, "cached: the output of run", first.Run.ID, "get (cached)"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
}
