package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
)

type server struct {
	t   *testing.T
	url string
	key string
}

func newServer(t *testing.T, cfg api.Config) *server {
	return newServerOn(t, mem.New(), cfg)
}

// newServerOn is newServer on store.
func newServerOn(t *testing.T, store *blob.Bucket, cfg api.Config) *server {
	// A 1 MiB per-payload limit (32 MiB by default) keeps the request
	// bodies that carry payloads to 3 MiB, so oversized bodies are quick
	// to send (TestPayloadLimitsOverHTTP tests the limit itself).
	e, err := engine.New(store, engine.Config{MaxOutputBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(e, cfg)
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(ts.Close)
	return &server{t: t, url: ts.URL + api.BasePath}
}

type reply struct {
	status int
	body   map[string]any
	raw    string
	ctype  string
	header http.Header
}

func (s *server) do(method, path, body string) reply {
	s.t.Helper()
	return s.doWith(method, path, body, nil)
}

// doWith is do with the request's other headers.
func (s *server) doWith(method, path, body string, header map[string]string) reply {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), method, s.url+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := reply{status: res.StatusCode, raw: string(b), ctype: res.Header.Get("Content-Type"), header: res.Header}
	json.Unmarshal(b, &r.body)
	return r
}

// runIDs lists runs (GET /runs?query) and returns their ids, in the
// listing's order.
func (s *server) runIDs(query string) []string {
	s.t.Helper()
	r := s.do("GET", "/runs?"+query, "")
	if r.status != 200 {
		s.t.Fatalf("list %s: %d %s", query, r.status, r.raw)
	}
	var out []string
	for _, x := range r.body["runs"].([]any) {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}

const okWorkflow = `{"name":"wf","version":"1","steps":[{"id":"a"},{"id":"b","after":["a"],"input":{"x":"${steps.a.output}"}}]}`

func register(s *server, wf string) reply {
	return s.do("POST", "/workers/register", `{"worker_id":"w1","workflows":[`+wf+`]}`)
}

// Bad input is a 4xx problem that names what is wrong, never a 500.
func TestBadInputIsA4xxNamingTheProblem(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	if r := register(s, okWorkflow); r.status != 200 {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	// Over the start's body limit: two payloads at the per-payload limit
	// (input and state, 1 MiB here: newServer) and a MiB.
	big := `{"workflow":"wf","input":"` + strings.Repeat("x", 3<<20) + `"}`
	cases := []struct {
		name, method, path, body string
		status                   int
		mention                  string
	}{
		{"unknown workflow", "POST", "/runs", `{"workflow":"nope"}`, 404, "nope"},
		{"unknown version", "POST", "/runs", `{"workflow":"wf","version":"9"}`, 404, "wf@9"},
		{"cyclic DAG", "POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"cyc","version":"1","steps":[{"id":"a","after":["b"]},{"id":"b","after":["a"]}]}]}`, 422, "cycle"},
		{"unknown dependency", "POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"u","version":"1","steps":[{"id":"a","after":["zz"]}]}]}`, 422, "steps[0].after[0]"},
		{"duplicate step", "POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"d","version":"1","steps":[{"id":"a"},{"id":"a"}]}]}`, 422, "duplicate"},
		{"bad CEL", "POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"c","version":"1","steps":[{"id":"a","input":{"x":"${input.(}"}}]}]}`, 422, "steps[0].input"},
		{"unclosed CEL", "POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"c","version":"1","steps":[{"id":"a","input":"${input.x"}]}]}`, 422, "unclosed"},
		{"malformed JSON", "POST", "/runs", `{"workflow": "wf",`, 400, ""},
		{"wrong type", "POST", "/runs", `{"workflow": 5}`, 422, "workflow"},
		{"unknown field", "POST", "/runs", `{"workflow":"wf","bogus":1}`, 422, "bogus"},
		{"oversized body", "POST", "/runs", big, 413, ""},
		{"malformed lease", "POST", "/steps/not-a-lease/complete", `{}`, 422, "lease"},
		{"unknown lease", "POST", "/steps/eyJyIjoiciIsInMiOiJhIiwibiI6MSwidyI6IncxIiwidCI6MSwiayI6IkFBQUFBQUFBQUFBQUFBQUFBQUFBQUEifQ/heartbeat", ``, 404, "lease"},
		{"unknown run", "GET", "/runs/NOPE", ``, 404, "NOPE"},
		{"unregistered worker", "POST", "/steps/claim", `{"worker_id":"ghost"}`, 404, "ghost"},
		{"bad status filter", "GET", "/runs?status=weird", ``, 422, "status"},
		{"fail without class", "POST", "/steps/eyJmIjoid2YiLCJ2IjoiMSIsInIiOiJyIiwicyI6ImEiLCJuIjoxLCJ3IjoidzEiLCJ0IjoxfQ/fail", `{"error":{"message":"x"}}`, 422, "class"},
		{"bad duration", "POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"t","version":"1","steps":[{"id":"a","timeout":"soon"}]}]}`, 422, ""},
		{"bad worker id", "POST", "/workers/register", `{"worker_id":"has space","workflows":[]}`, 422, "worker_id"},
		{"schedule of an unregistered workflow", "POST", "/schedules", `{"workflow":"nope","cron":"0 * * * *"}`, 422, `"location":"body.workflow"`},
		{"schedule of an unregistered version", "POST", "/schedules", `{"workflow":"wf","version":"9","cron":"0 * * * *"}`, 422, `"location":"body.version"`},
		{"wait without event", "POST", "/workers/register", `{"worker_id":"w1","workflows":[{"name":"w","version":"1","steps":[{"id":"a","kind":"wait"}]}]}`, 422, "event"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(c.method, c.path, c.body)
			if r.status != c.status {
				t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, r.status, c.status, r.raw)
			}
			if !strings.HasPrefix(r.ctype, "application/problem+json") {
				t.Fatalf("content type %q, want problem+json", r.ctype)
			}
			if c.mention != "" && !strings.Contains(r.raw, c.mention) {
				t.Fatalf("problem does not mention %q: %s", c.mention, r.raw)
			}
			if strings.Contains(r.raw, "goroutine ") || strings.Contains(r.raw, ".go:") {
				t.Fatalf("problem leaks a stack trace: %s", r.raw)
			}
		})
	}
}

func TestDefinitionConflictAndVersions(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	if r := register(s, okWorkflow); r.status != 200 {
		t.Fatal(r.raw)
	}
	// Identical: a no-op.
	if r := register(s, okWorkflow); r.status != 200 {
		t.Fatalf("identical re-register: %d %s", r.status, r.raw)
	}
	// Same version, other content: 409 naming it.
	other := strings.Replace(okWorkflow, `"id":"b"`, `"id":"c"`, 1)
	other = strings.Replace(other, `"after":["a"]`, `"after":["a"]`, 1)
	r := register(s, other)
	if r.status != 409 || !strings.Contains(r.raw, "wf version 1") {
		t.Fatalf("conflicting re-register: %d %s", r.status, r.raw)
	}
	// A second version coexists; new runs default to it; runs pin theirs.
	v2 := strings.Replace(okWorkflow, `"version":"1"`, `"version":"2"`, 1)
	if r := register(s, v2); r.status != 200 {
		t.Fatal(r.raw)
	}
	r = s.do("POST", "/runs", `{"workflow":"wf"}`)
	if r.status != 201 || r.body["run"].(map[string]any)["version"] != "2" {
		t.Fatalf("start: %d %s", r.status, r.raw)
	}
	r = s.do("POST", "/runs", `{"workflow":"wf","version":"1"}`)
	if r.status != 201 || r.body["run"].(map[string]any)["version"] != "1" {
		t.Fatalf("start v1: %d %s", r.status, r.raw)
	}
	r = s.do("GET", "/workflows", "")
	if r.status != 200 || !strings.Contains(r.raw, `"versions":["1","2"]`) {
		t.Fatalf("list workflows: %s", r.raw)
	}
}

func TestIdempotentStart(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	register(s, okWorkflow)
	a := s.do("POST", "/runs", `{"workflow":"wf","idempotency_key":"order-42"}`)
	b := s.do("POST", "/runs", `{"workflow":"wf","idempotency_key":"order-42"}`)
	ida := a.body["run"].(map[string]any)["id"]
	idb := b.body["run"].(map[string]any)["id"]
	if ida != idb || b.body["existed"] != true || a.body["existed"] != false {
		t.Fatalf("two starts with one key: %v %v (%s)", ida, idb, b.raw)
	}
}

// The refusal reasons reach the client as 409 problems with a reason field.
func TestRejectionIsProblemWithReason(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	register(s, okWorkflow)
	run := s.do("POST", "/runs", `{"workflow":"wf"}`).body["run"].(map[string]any)["id"].(string)
	c := s.do("POST", "/steps/claim", `{"worker_id":"w1","max":1,"wait_ms":1000}`)
	leases := c.body["leases"].([]any)
	if len(leases) != 1 {
		t.Fatalf("claim: %s", c.raw)
	}
	id := leases[0].(map[string]any)["id"].(string)
	if r := s.do("POST", "/steps/"+id+"/complete", `{"output":1}`); r.status != 200 {
		t.Fatal(r.raw)
	}
	r := s.do("POST", "/steps/"+id+"/complete", `{"output":1}`)
	if r.status != 409 || r.body["reason"] != "already_applied" {
		t.Fatalf("repeat complete: %d %s", r.status, r.raw)
	}
	s.do("POST", "/runs/"+run+"/cancel", `{}`)
	c = s.do("POST", "/steps/claim", `{"worker_id":"w1","run":"`+run+`","wait_ms":100}`)
	if c.status != 409 || c.body["reason"] != "run_terminal" {
		t.Fatalf("scoped claim of a cancelled run: %d %s", c.status, c.raw)
	}
}

func TestKeysScopesAndAudit(t *testing.T) {
	keys, err := auth.ParseKeys(strings.Join([]string{
		"wrk:worker:" + auth.HashSecret("s-worker"),
		"exe:execute:" + auth.HashSecret("s-exec"),
		"rd:read:" + auth.HashSecret("s-read"),
		"wr:write:" + auth.HashSecret("s-write"),
		"adm:admin:" + auth.HashSecret("s-admin"),
	}, ","))
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, api.Config{Keys: keys})
	check := func(key, method, path, body string, want int) reply {
		t.Helper()
		s.key = key
		r := s.do(method, path, body)
		if r.status != want {
			t.Fatalf("key %q %s %s: %d, want %d: %s", key, method, path, r.status, want, r.raw)
		}
		return r
	}
	check("", "POST", "/workers/register", `{"worker_id":"w1","workflows":[`+okWorkflow+`]}`, 401)
	check("wrong", "POST", "/workers/register", `{"worker_id":"w1","workflows":[`+okWorkflow+`]}`, 401)
	check("s-exec", "POST", "/workers/register", `{"worker_id":"w1","workflows":[`+okWorkflow+`]}`, 403)
	check("s-worker", "POST", "/workers/register", `{"worker_id":"w1","workflows":[`+okWorkflow+`]}`, 200)
	// A worker key cannot start runs; an execute key cannot claim.
	check("s-worker", "POST", "/runs", `{"workflow":"wf"}`, 403)
	run := check("s-exec", "POST", "/runs", `{"workflow":"wf"}`, 201).body["run"].(map[string]any)["id"].(string)
	check("s-exec", "POST", "/steps/claim", `{"worker_id":"w1"}`, 403)
	check("s-write", "POST", "/steps/claim", `{"worker_id":"w1"}`, 200)
	check("s-write", "POST", "/runs", `{"workflow":"wf"}`, 201)
	check("s-write", "GET", "/runs/"+run, "", 403)
	check("s-read", "GET", "/runs/"+run, "", 200)
	check("s-read", "GET", "/runs/"+run+"/journal", "", 200)
	check("s-read", "POST", "/reaper/run", "", 403)
	check("s-admin", "POST", "/reaper/run", "", 200)
	check("", "GET", "/healthz", "", 200)
}

func TestAuditRecordsReads(t *testing.T) {
	store := mem.New()
	e, _ := engine.New(store, engine.Config{})
	keys, _ := auth.ParseKeys("rd:read:" + auth.HashSecret("s") + ",adm:admin:" + auth.HashSecret("a"))
	a := api.New(e, api.Config{Keys: keys})
	ts := httptest.NewServer(a.Handler())
	defer ts.Close()
	req := func(key, method, path, body string) *http.Response {
		r, _ := http.NewRequest(method, ts.URL+api.BasePath+path, bytes.NewBufferString(body))
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	req("a", "POST", "/workers/register", `{"worker_id":"w1","workflows":[`+okWorkflow+`]}`)
	res, _ := e.StartRun(context.Background(), cairn.StartRequest{Workflow: "wf"})
	req("s", "GET", "/runs/"+res.Run.ID, "")
	req("s", "GET", "/runs/"+res.Run.ID+"/journal", "")
	req("a", "POST", "/steps/claim", `{"worker_id":"w1"}`) // worker calls are not audited
	req("s", "GET", "/runs/"+res.Run.ID+"/status", "")     // progress has no contents: not audited
	objs, err := store.ListAll(context.Background(), "audit/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d audit records, want 2", len(objs))
	}
	for _, o := range objs {
		rec, _ := store.Get(context.Background(), o.Key)
		if !bytes.Contains(rec.Data, []byte(`"who":"rd"`)) || !bytes.Contains(rec.Data, []byte(res.Run.ID)) {
			t.Fatalf("audit record %s", rec.Data)
		}
	}
}

// A progress read held with wait_ms returns when the run changes.
func TestRunStatusLongPoll(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	register(s, okWorkflow)
	run := s.do("POST", "/runs", `{"workflow":"wf"}`).body["run"].(map[string]any)["id"].(string)
	st := s.do("GET", "/runs/"+run+"/status", "")
	rev := int(st.body["rev"].(float64))
	if st.status != 200 || st.body["steps_total"].(float64) != 2 || st.body["input"] != nil {
		t.Fatalf("status: %s", st.raw)
	}
	got := make(chan reply, 1)
	go func() { got <- s.do("GET", fmt.Sprintf("/runs/%s/status?after=%d&wait_ms=10000", run, rev), "") }()
	select {
	case r := <-got:
		t.Fatalf("held poll returned before any change: %s", r.raw)
	case <-time.After(300 * time.Millisecond):
	}
	c := s.do("POST", "/steps/claim", `{"worker_id":"w1","wait_ms":1000}`)
	id := c.body["leases"].([]any)[0].(map[string]any)["id"].(string)
	s.do("POST", "/steps/"+id+"/complete", `{"output":1}`)
	select {
	case r := <-got:
		if int(r.body["rev"].(float64)) <= rev || r.body["steps_done"].(float64) != 1 {
			t.Fatalf("after the change: %s", r.raw)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held poll did not return after the run changed")
	}
}

// An event whose name no wait of the run's definition uses is kept
// (recorded, as before) but its answer carries a warning; one a wait uses
// gets none.
func TestEventNoWaitUsesWarns(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	if r := register(s, `{"name":"ap","version":"1","steps":[{"id":"a"},{"id":"w","kind":"wait","event":"approved","after":["a"]}]}`); r.status != 200 {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	r := s.do("POST", "/runs", `{"workflow":"ap"}`)
	run, _ := r.body["run"].(map[string]any)["id"].(string)
	send := func(name string) reply { return s.do("POST", "/runs/"+run+"/events", `{"name":"`+name+`"}`) }
	if r := send("aproved"); r.status != 200 || !strings.Contains(r.raw, `"recorded":true`) || !strings.Contains(r.raw, `"warning":"no wait step`) || !strings.Contains(r.raw, `\"approved\"`) {
		t.Fatalf("typo: %d %s", r.status, r.raw)
	}
	if r := send("approved"); r.status != 200 || strings.Contains(r.raw, "warning") {
		t.Fatalf("a waited name: %d %s", r.status, r.raw)
	}
}

// A listing filters by correlation and by when runs started (the
// dashboard's search and a user's GET /runs?correlation= were ignored
// before); a bad time is a 422 naming the parameter.
func TestListRunsByCorrelationAndTime(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	if r := register(s, okWorkflow); r.status != 200 {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	start := func(corr string) (string, time.Time) {
		r := s.do("POST", "/runs", `{"workflow":"wf","correlation":"`+corr+`"}`)
		if r.status != 201 {
			t.Fatalf("start: %d %s", r.status, r.raw)
		}
		run := r.body["run"].(map[string]any)
		at, _ := time.Parse(time.RFC3339Nano, run["created_at"].(string))
		return run["id"].(string), at
	}
	a1, t1 := start("order-1")
	time.Sleep(5 * time.Millisecond) // distinct creation times, 1 ms apart at least
	b, _ := start("order-2")
	time.Sleep(5 * time.Millisecond)
	a2, t3 := start("order-1")
	ids := s.runIDs
	if got := ids("correlation=order-1"); !slices.Equal(got, []string{a2, a1}) {
		t.Errorf("correlation=order-1: %v, want [%s %s]", got, a2, a1)
	}
	after := url.QueryEscape(t1.Add(time.Millisecond).Format(time.RFC3339Nano))
	before := url.QueryEscape(t3.Format(time.RFC3339Nano))
	if got := ids("started_after=" + after + "&started_before=" + before); !slices.Equal(got, []string{b}) {
		t.Errorf("between the first and the last start: %v, want [%s]", got, b)
	}
	if got := ids("correlation=order-2&started_after=" + url.QueryEscape(t3.Format(time.RFC3339Nano))); len(got) != 0 {
		t.Errorf("order-2 after the last start: %v, want none", got)
	}
	if got := ids("id_prefix=" + a2); !slices.Equal(got, []string{a2}) {
		t.Errorf("id_prefix=%s: %v", a2, got)
	}
	if r := s.do("GET", "/runs?id_prefix=no-dashes", ""); r.status != 422 || !strings.Contains(r.raw, "id_prefix") {
		t.Errorf("a bad id prefix: %d %s", r.status, r.raw)
	}
	if r := s.do("GET", "/runs?started_after=yesterday", ""); r.status != 422 || !strings.Contains(r.raw, "started_after") {
		t.Errorf("a bad time: %d %s", r.status, r.raw)
	}
}

// A GET /runs/{run}?wait_ms= held until the run ends on this instance is
// recorded in the record of the commit that ended it: it is answered with
// no audit object of its own, and the run's record holds who read it. A
// run that had already ended when asked is audited as any read.
func TestAwaitedReadRecordedInTheRun(t *testing.T) {
	store := mem.New()
	e, err := engine.New(store, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := auth.ParseKeys("rd:read:" + auth.HashSecret("s"))
	ts := httptest.NewServer(api.New(e, api.Config{Keys: keys}).Handler())
	defer ts.Close()
	s := &server{t: t, url: ts.URL + api.BasePath, key: "s"}
	ctx := context.Background()
	wf := cairn.Workflow{Name: "one", Version: "1", Steps: []cairn.Step{{ID: "a"}}}
	if _, err := e.Register(ctx, cairn.RegisterRequest{WorkerID: "w1", Workflows: []cairn.Workflow{wf}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "one"})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Run.ID
	got := make(chan reply, 1)
	go func() { got <- s.do("GET", "/runs/"+run+"?wait_ms=10000", "") }()
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "the GET held", func() (bool, string) {
		return e.HeldReads() > 0, "no read held"
	})
	ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 1, WaitMs: 1000})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	if _, err := e.Complete(ctx, ls[0].ID, cairn.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.status != 200 || r.body["status"] != "completed" {
		t.Fatalf("held GET: %d %s", r.status, r.raw)
	}
	if objs, err := store.ListAll(ctx, "audit/"); err != nil || len(objs) != 0 {
		t.Fatalf("%d audit objects (%v) for a read recorded in the run", len(objs), err)
	}
	rec, err := store.Get(ctx, "runs/"+run)
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Reads []struct{ Who, Operation string } `json:"reads"`
	}
	if err := json.Unmarshal(rec.Data, &stored); err != nil || len(stored.Reads) != 1 || stored.Reads[0].Who != "rd" || stored.Reads[0].Operation != "getRun" {
		t.Fatalf("the run's reads: %+v %v in %s", stored.Reads, err, rec.Data)
	}
	// Asked once it ended: audited as any read, the record unchanged.
	if r := s.do("GET", "/runs/"+run+"?wait_ms=10000", ""); r.status != 200 {
		t.Fatalf("GET of the ended run: %d %s", r.status, r.raw)
	}
	objs, err := store.ListAll(ctx, "audit/")
	if err != nil || len(objs) != 1 {
		t.Fatalf("%d audit objects (%v), want the second read's", len(objs), err)
	}
	if o, _ := store.Get(ctx, objs[0].Key); !bytes.Contains(o.Data, []byte(`"who":"rd"`)) || bytes.Contains(o.Data, []byte("\n")) {
		t.Fatalf("audit object %s", o.Data)
	}
}
