package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/openapi/client"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

func isCall(r *http.Request, suffix string) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, suffix)
}

// A run cancelled while a body runs: the next heartbeat is told
// run_terminal, the body's context is cancelled with ErrRunEnded, nothing
// is published, and the worker stops taking that run's leases.
func TestRunTerminalCancelsBody(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var published atomic.Int32
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if isCall(r, "/complete") || isCall(r, "/fail") {
			published.Add(1)
		}
		return next.RoundTrip(r)
	})
	began := make(chan struct{})
	causes := make(chan error, 1)
	wf := Workflow("cancelme", "1").Task("long", Handle(func(ctx StepContext, _ struct{}) (int, error) {
		close(began)
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return 0, ctx.Err()
		case <-time.After(20 * time.Second):
			causes <- nil
			return 1, nil
		}
	}))
	w := NewWorker(e.client(t, WithHTTPClient(hc)), WithLogger(quiet())).Register(wf)
	serve(t, w)
	run := start(t, e.c, "cancelme", StartOptions{})
	<-began
	t0 := time.Now()
	if _, err := e.c.Cancel(context.Background(), run.ID, "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, ErrRunEnded) {
			t.Fatalf("cause %v, want ErrRunEnded", cause)
		}
		t.Logf("body cancelled %v after the run was", time.Since(t0))
	case <-time.After(5 * time.Second):
		t.Fatal("body not cancelled within 5s")
	}
	eventually(t, 2*time.Second, "the lease to be dropped", func() bool { return w.InFlight() == 0 })
	if n := published.Load(); n != 0 {
		t.Fatalf("%d complete/fail calls after run_terminal, want 0", n)
	}
	if !w.hasEnded(run.ID) {
		t.Fatal("the worker did not record the run as ended")
	}
	r, _ := e.c.Get(context.Background(), run.ID)
	if r.Status != RunCancelled {
		t.Fatalf("status %s", r.Status)
	}
	// Cancelling again is a clear 409.
	if _, err := e.c.Cancel(context.Background(), run.ID, ""); !IsConflict(err) || ReasonOf(err) != "" {
		t.Fatalf("second cancel: %v", err)
	}
}

// pausable makes a worker's heartbeats (and optionally complete) fail as
// if the process had stopped, until resumed.
type pausable struct {
	paused        atomic.Bool
	pauseComplete bool
	completes     atomic.Int32
	fenced        atomic.Int32
}

// cutOffUntilLost pauses the worker's calls until the engine has
// reclaimed the lease of ctx's attempt (lease_lost in the run's journal).
func (p *pausable) cutOffUntilLost(t *testing.T, c *Client, ctx StepContext) {
	p.paused.Store(true)
	waitJournal(t, c, ctx.Info().Run, "lease_lost")
	p.paused.Store(false)
}

func (p *pausable) client() *http.Client {
	return interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if p.paused.Load() && (isCall(r, "/steps/heartbeat") || p.pauseComplete && isCall(r, "/complete")) {
			return nil, errors.New("simulated pause: no network")
		}
		if isCall(r, "/complete") {
			// Counted as sent, not as answered: the server wakes the
			// run's waiters when it commits, which can be before this
			// round trip returns.
			p.completes.Add(1)
		}
		resp, err := next.RoundTrip(r)
		if err == nil && isCall(r, "/complete") {
			if resp.StatusCode == http.StatusConflict {
				b, _ := io.ReadAll(resp.Body)
				if bytes.Contains(b, []byte(`"fenced"`)) {
					p.fenced.Add(1)
				}
				resp.Body = io.NopCloser(bytes.NewReader(b))
			}
		}
		return resp, err
	})
}

func fastReap() sdktest.Options {
	return sdktest.Options{
		Engine:    engine.Config{LeaseTTL: time.Second, HeartbeatInterval: 200 * time.Millisecond, RecoveryWindow: 100 * time.Millisecond},
		ReapEvery: 50 * time.Millisecond,
	}
}

func waitJournal(t *testing.T, c *Client, run string, typ JournalType) {
	t.Helper()
	eventually(t, 10*time.Second, "journal entry "+string(typ), func() bool {
		j, err := c.Journal(context.Background(), run)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(j, func(x JournalEntry) bool { return x.Type == typ })
	})
}

// A worker paused past its lease's expiry comes back to a reclaimed lease:
// its next heartbeat is fenced, the body's context is cancelled with
// ErrLeaseLost, nothing is published, and the re-queued attempt runs.
func TestFencedHeartbeatCancelsBody(t *testing.T) {
	e := newEnv(t, fastReap())
	p := &pausable{}
	causes := make(chan error, 1)
	wf := Workflow("pause", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (string, error) {
		if ctx.Info().Attempt > 1 {
			return "fresh", nil
		}
		p.cutOffUntilLost(t, e.c, ctx)
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return "stale", ctx.Err()
		case <-time.After(10 * time.Second):
			causes <- nil
			return "stale", nil
		}
	}))
	w := NewWorker(e.client(t, WithHTTPClient(p.client())), WithConcurrency(2), WithLogger(quiet())).Register(wf)
	serve(t, w)
	run := start(t, e.c, "pause", StartOptions{})
	r := waitRun(t, e.c, run.ID, 15*time.Second)
	if cause := <-causes; !errors.Is(cause, ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", cause)
	}
	if r.Status != RunCompleted || string(r.Output) != `"fresh"` {
		t.Fatalf("run %s output %s", r.Status, r.Output)
	}
	a := r.Step("s").Attempts
	if len(a) != 2 || a[0].Outcome != "lost" || a[1].Outcome != "completed" {
		t.Fatalf("attempts %+v", a)
	}
	if n := p.completes.Load(); n != 1 {
		t.Fatalf("%d complete calls, want 1 (the fenced body publishes nothing)", n)
	}
}

// A body that finishes while its worker is cut off, after the lease was
// reclaimed, is told fenced on complete: the work is dropped, and the
// re-queued attempt's output wins.
func TestFencedCompleteIsDropped(t *testing.T) {
	e := newEnv(t, fastReap())
	p := &pausable{pauseComplete: true}
	logs := &logRecorder{}
	// The run waits after s, so it is still running (and the stale
	// complete is told fenced, not run_terminal) whenever it arrives.
	wf := Workflow("pause2", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (string, error) {
		if ctx.Info().Attempt > 1 {
			return "fresh", nil
		}
		p.cutOffUntilLost(t, e.c, ctx)
		return "stale", nil
	})).Wait("hold", "never", After("s"))
	w := NewWorker(e.client(t, WithHTTPClient(p.client())), WithConcurrency(2), WithLogger(slogOf(logs))).Register(wf)
	serve(t, w)
	run := start(t, e.c, "pause2", StartOptions{})
	eventually(t, 10*time.Second, "the fenced complete", func() bool { return p.fenced.Load() == 1 })
	eventually(t, 5*time.Second, "the fenced complete's log", func() bool {
		return len(logs.find("complete refused: the lease was fenced")) == 1
	})
	eventually(t, 10*time.Second, "s to complete", func() bool {
		r, err := e.c.Get(context.Background(), run.ID)
		return err == nil && r.Step("s").Status == "completed"
	})
	r, _ := e.c.Get(context.Background(), run.ID)
	if s := r.Step("s"); string(s.Output) != `"fresh"` || s.Attempts[0].Outcome != "lost" {
		t.Fatalf("s: output %s attempts %+v", s.Output, s.Attempts)
	}
}

// The answer to a complete is lost: the SDK retries, is told
// already_applied, and takes it as success.
func TestLostCompleteAnswerIsAlreadyApplied(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var completes, fails, dropped, unavailable atomic.Int32
	var answers sync.Map
	extra := make(chan string, 1) // a fail, or a complete after the third
	signal := func(what string) {
		select {
		case extra <- what:
		default:
		}
	}
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if isCall(r, "/fail") {
			fails.Add(1)
			signal("a fail")
		}
		if !isCall(r, "/complete") {
			return next.RoundTrip(r)
		}
		n := completes.Add(1)
		if n > 3 {
			signal(fmt.Sprintf("complete #%d", n))
		}
		if n == 1 {
			// A 503 before anything is applied: retried.
			unavailable.Add(1)
			return &http.Response{StatusCode: 503, Header: http.Header{"Content-Type": {"application/problem+json"}},
				Body: io.NopCloser(strings.NewReader(`{"status":503,"title":"Service Unavailable","detail":"the store is busy"}`)), Request: r}, nil
		}
		resp, err := next.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers.Store(n, fmt.Sprintf("%d %s", resp.StatusCode, b))
		if n == 2 {
			// Applied, but the answer never arrives.
			dropped.Add(1)
			return nil, errors.New("simulated: connection reset after the request was sent")
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp, nil
	})
	logs := &logRecorder{}
	wf := Workflow("lost", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (int, error) { return 42, nil }))
	w := NewWorker(e.client(t, WithHTTPClient(hc)), WithLogger(slogOf(logs))).Register(wf)
	serve(t, w)
	run := start(t, e.c, "lost", StartOptions{})
	r := waitRun(t, e.c, run.ID, 10*time.Second)
	if r.Status != RunCompleted || string(r.Output) != "42" {
		t.Fatalf("run %s output %s", r.Status, r.Output)
	}
	var third any
	eventually(t, 5*time.Second, "the retried complete", func() bool { third, _ = answers.Load(int32(3)); return third != nil })
	if s, _ := third.(string); !strings.HasPrefix(s, "409") || !strings.Contains(s, "already_applied") {
		t.Fatalf("third complete answered %q, want 409 already_applied", s)
	}
	// Nothing more after the already_applied answer: no fail, no fourth
	// complete. The SDK would send either at once on taking the answer
	// for a failure; 100 ms is many round trips on this in-process server.
	select {
	case what := <-extra:
		t.Fatalf("%s after the already_applied answer", what)
	case <-time.After(100 * time.Millisecond):
	}
	if fails.Load() != 0 || completes.Load() != 3 {
		t.Fatalf("completes %d fails %d", completes.Load(), fails.Load())
	}
	if errs := logs.find("ERROR"); len(errs) > 0 {
		t.Fatalf("error logs: %v", errs)
	}
	if len(logs.find("already applied")) != 1 {
		logs.dump(t)
		t.Fatal("no already_applied log")
	}
	if a := r.Step("s").Attempts; len(a) != 1 || a[0].Outcome != "completed" {
		t.Fatalf("attempts %+v", a)
	}
}

// not_started: complete of an at_most_once attempt whose started never
// arrived. A hand-written worker on the raw client provokes it; the SDK,
// should it ever happen (here: a proxy that swallows started), reports it
// loudly.
func TestNotStarted(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	api := e.c.API()
	def, err := Workflow("amo", "1").Task("pay", Handle(func(StepContext, struct{}) (int, error) { return 1, nil }), AtMostOnce()).Definition()
	if err != nil {
		t.Fatal(err)
	}
	var cw client.Workflow
	b, _ := json.Marshal(def)
	json.Unmarshal(b, &cw)
	id := "hand-written"
	reg, err := api.RegisterWorkerWithResponse(ctx, client.RegisterRequest{WorkerId: &id, Workflows: []client.Workflow{cw}})
	if err := e.c.check(err, reg); err != nil {
		t.Fatal(err)
	}
	run := start(t, e.c, "amo", StartOptions{})
	max, wait := int64(1), int64(5000)
	cl, err := api.ClaimStepsWithResponse(ctx, client.ClaimRequest{WorkerId: id, Max: &max, WaitMs: &wait})
	if err := e.c.check(err, cl); err != nil || len(cl.JSON200.Leases) != 1 {
		t.Fatalf("claim: %v", err)
	}
	lease := cl.JSON200.Leases[0]
	if lease.Run != run.ID || lease.Delivery != "at_most_once" {
		t.Fatalf("lease %+v", lease)
	}
	resp, err := api.CompleteStepWithResponse(ctx, lease.Id, client.CompleteRequest{Output: json.RawMessage("1")})
	err = e.c.check(err, resp)
	if ReasonOf(err) != ReasonNotStarted || resp.ApplicationproblemJSON409 == nil {
		t.Fatalf("complete without started: %v", err)
	}
	// With started, the same lease completes.
	st, err := api.StepStartedWithResponse(ctx, lease.Id)
	if err := e.c.check(err, st); err != nil {
		t.Fatal(err)
	}
	resp, err = api.CompleteStepWithResponse(ctx, lease.Id, client.CompleteRequest{Output: json.RawMessage("1")})
	if err := e.c.check(err, resp); err != nil {
		t.Fatal(err)
	}

	// The SDK path: started is swallowed by a broken proxy that answers
	// 200 itself; the body runs; complete is refused as not_started.
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if isCall(r, "/started") {
			body := fmt.Sprintf(`{"expires_at":%q}`, time.Now().Add(time.Minute).Format(time.RFC3339Nano))
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		}
		return next.RoundTrip(r)
	})
	logs := &logRecorder{}
	ran := make(chan struct{}, 1)
	wf := Workflow("amo", "1").Task("pay", Handle(func(StepContext, struct{}) (int, error) {
		ran <- struct{}{}
		return 1, nil
	}), AtMostOnce())
	w := NewWorker(e.client(t, WithHTTPClient(hc)), WithLogger(slogOf(logs))).Register(wf)
	serve(t, w)
	start(t, e.c, "amo", StartOptions{})
	<-ran
	eventually(t, 5*time.Second, "the not_started error log", func() bool { return len(logs.find("WORKER BUG")) == 1 })
	if l := logs.find("WORKER BUG")[0]; !strings.HasPrefix(l, "ERROR") || !strings.Contains(l, "not_started") {
		t.Fatalf("log %q", l)
	}
}

// The worker never holds more leases than its concurrency: it reserves
// slots before it claims, and claims no more than it reserved. Leases
// come from claim answers and from complete answers (claim_next, eager
// dispatch: most of them on a busy worker); every one counts, from the
// answer that granted it to the answer to its complete or fail.
func TestSlotReservation(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	const conc = 3
	var (
		mu        sync.Mutex
		held      = map[string]bool{} // leases granted and not yet reported, seen on the wire
		violation string
		claims    int
		leased    int // leases granted, by claims and by completes
		eager     int // of which by completes
	)
	violate := func(format string, args ...any) {
		if violation == "" {
			violation = fmt.Sprintf(format, args...)
		}
	}
	// grant counts the leases of an answer to a request that asked for at
	// most max.
	grant := func(call string, max int, resp *http.Response) {
		rb, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(rb))
		var out struct{ Leases []client.Lease }
		json.Unmarshal(rb, &out)
		mu.Lock()
		defer mu.Unlock()
		if len(out.Leases) > max {
			violate("%s asked for at most %d leases and got %d", call, max, len(out.Leases))
		}
		for _, l := range out.Leases {
			if held[l.Id] {
				violate("lease %s granted twice", l.Id)
			}
			held[l.Id] = true
			leased++
			if call != "claim" {
				eager++
			}
		}
		if len(held) > conc {
			violate("holding %d leases after a %s answer", len(held), call)
		}
	}
	// leaseOf is the lease a /steps/{lease}/<call> is about.
	leaseOf := func(r *http.Request) string {
		p := r.URL.EscapedPath()
		p = p[:strings.LastIndex(p, "/")]
		id, _ := url.PathUnescape(p[strings.LastIndex(p, "/")+1:])
		return id
	}
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		call := ""
		switch {
		case isCall(r, "/steps/claim"):
			call = "claim"
		case isCall(r, "/complete"):
			call = "complete"
		case isCall(r, "/fail"):
			call = "fail"
		default:
			return next.RoundTrip(r)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var req struct {
			Max       int
			ClaimNext *struct{ Max int } `json:"claim_next"`
		}
		json.Unmarshal(b, &req)
		max := req.Max // a claim's
		mu.Lock()
		if call == "claim" {
			claims++
			if len(held)+max > conc {
				violate("claim of max %d while holding %d leases", max, len(held))
			}
		} else {
			max = 0
			if req.ClaimNext != nil {
				max = req.ClaimNext.Max
			}
			// The reported lease's slot is the one claim_next refills.
			if !held[leaseOf(r)] {
				violate("%s of lease %s, which the worker was not granted", call, leaseOf(r))
			} else if len(held)-1+max > conc {
				violate("%s with claim_next max %d while holding %d leases", call, max, len(held))
			}
		}
		mu.Unlock()
		resp, err := next.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		if call != "claim" && resp.StatusCode/100 == 2 {
			mu.Lock()
			delete(held, leaseOf(r))
			mu.Unlock()
		}
		if resp.StatusCode/100 == 2 {
			grant(call, max, resp)
		}
		return resp, nil
	})
	var running, peak, total atomic.Int32
	h := Handle(func(ctx StepContext, _ struct{}) (int, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		running.Add(-1)
		total.Add(1)
		return 0, nil
	})
	wf := Workflow("fan", "1")
	for i := range 12 {
		wf.Task(fmt.Sprintf("s%02d", i), h)
	}
	w := NewWorker(e.client(t, WithHTTPClient(hc)), WithConcurrency(conc), WithLogger(quiet())).Register(wf)
	serve(t, w)
	var runs []string
	for range 2 {
		runs = append(runs, start(t, e.c, "fan", StartOptions{}).ID)
	}
	for _, id := range runs {
		if r := waitRun(t, e.c, id, 15*time.Second); r.Status != RunCompleted {
			t.Fatalf("run %s", r.Status)
		}
	}
	// A run is completed once the server committed its last complete; the
	// worker's side (this interceptor) sees that answer a moment later.
	testutil.Eventually(t, 5*time.Second, "the worker to see its last answers", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(held) == 0, fmt.Sprintf("%d leases still held: %v", len(held), held)
	})
	mu.Lock()
	defer mu.Unlock()
	if violation != "" {
		t.Fatal(violation)
	}
	if p := peak.Load(); p > conc || p < 2 {
		t.Fatalf("peak concurrency %d, want 2..%d", p, conc)
	}
	if total.Load() != 24 {
		t.Fatalf("%d bodies ran, want 24", total.Load())
	}
	if leased != 24 || len(held) != 0 {
		t.Fatalf("%d leases granted, %d still held; want 24, 0", leased, len(held))
	}
	t.Logf("%d claims, %d leases (%d from completes), peak %d bodies", claims, leased, eager, peak.Load())
}

// Long bodies outlive the lease TTL thanks to heartbeats, one batched
// call per period for every lease held.
func TestBatchedHeartbeatsKeepLeases(t *testing.T) {
	e := newEnv(t, sdktest.Options{Engine: engine.Config{LeaseTTL: time.Second, HeartbeatInterval: 250 * time.Millisecond, RecoveryWindow: 100 * time.Millisecond}, ReapEvery: 50 * time.Millisecond})
	var batched, single, maxBatch atomic.Int32
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		switch {
		case isCall(r, "/steps/heartbeat"):
			batched.Add(1)
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var req struct{ Leases []string }
			json.Unmarshal(b, &req)
			if n := int32(len(req.Leases)); n > maxBatch.Load() {
				maxBatch.Store(n)
			}
		case isCall(r, "/heartbeat"):
			single.Add(1)
		}
		return next.RoundTrip(r)
	})
	h := Handle(func(ctx StepContext, _ struct{}) (int, error) {
		select {
		case <-time.After(1800 * time.Millisecond):
			return 1, nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	})
	wf := Workflow("long", "1").Task("a", h).Task("b", h).Task("c", h).Task("d", h)
	w := NewWorker(e.client(t, WithHTTPClient(hc)), WithConcurrency(4), WithLogger(quiet())).Register(wf)
	serve(t, w)
	r := waitRun(t, e.c, start(t, e.c, "long", StartOptions{}).ID, 15*time.Second)
	if r.Status != RunCompleted {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	for _, s := range r.Steps {
		if len(s.Attempts) != 1 {
			t.Fatalf("step %s took %d attempts: a lease was lost", s.ID, len(s.Attempts))
		}
	}
	if single.Load() != 0 || batched.Load() < 4 || batched.Load() > 12 || maxBatch.Load() != 4 {
		t.Fatalf("heartbeats: %d batched (largest %d leases), %d single", batched.Load(), maxBatch.Load(), single.Load())
	}
}

// A lease of a step the worker holds no handler for is failed as
// unservable without running anything; it goes to a worker that has the
// handler, spending no retry budget.
func TestUnservable(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var ranA, ranB atomic.Int32
	build := func() *WorkflowDef {
		return Workflow("mixed", "1").
			Task("a", Handle(func(StepContext, struct{}) (int, error) { ranA.Add(1); return 1, nil })).
			Task("b", Handle(func(StepContext, struct{}) (int, error) { ranB.Add(1); return 2, nil }), After("a"))
	}
	partial := build()
	delete(partial.handlers, "b") // registered definition has b; handler set lacks it
	w1 := NewWorker(e.c, WithName("w-partial"), WithLogger(quiet())).Register(partial)
	serve(t, w1)
	run := start(t, e.c, "mixed", StartOptions{})
	waitJournal(t, e.c, run.ID, "step_requeued")
	if ranB.Load() != 0 {
		t.Fatal("b ran on the worker without its handler")
	}
	w2 := NewWorker(e.c, WithName("w-full"), WithLogger(quiet())).Register(build())
	serve(t, w2)
	r := waitRun(t, e.c, run.ID, 10*time.Second)
	if r.Status != RunCompleted || ranA.Load() != 1 || ranB.Load() != 1 {
		t.Fatalf("run %s, a ran %d, b ran %d", r.Status, ranA.Load(), ranB.Load())
	}
	b := r.Step("b")
	if b.Failures != 0 || len(b.Attempts) != 2 {
		t.Fatalf("b: failures %d attempts %+v", b.Failures, b.Attempts)
	}
	if a := b.Attempts[0]; a.Worker != "w-partial" || a.Error == nil || a.Error.Class != ClassUnservable || a.StartedAt != nil {
		t.Fatalf("first attempt %+v", a)
	}
	if a := b.Attempts[1]; a.Worker != "w-full" || a.Outcome != "completed" {
		t.Fatalf("second attempt %+v", a)
	}
}
