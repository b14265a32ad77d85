package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/storetest"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

type ticket struct {
	Subject  string `json:"subject"`
	Body     string `json:"body"`
	Customer string `json:"customer"`
}

type classification struct {
	Category string `json:"category"`
	Priority string `json:"priority"`
}

func TestWorkflowRunEndToEnd(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var seen atomic.Value
	wf := Workflow("e2e", "1").
		Deadline(time.Minute).
		Task("classify", Handle(func(ctx StepContext, in ticket) (classification, error) {
			if ctx.Info().Step != "classify" || ctx.Info().Attempt != 1 || ctx.Info().Worker != "w-e2e" {
				t.Errorf("info = %+v", ctx.Info())
			}
			if !strings.HasSuffix(ctx.IdempotencyKey(), ":classify") {
				t.Errorf("idempotency key %q", ctx.IdempotencyKey())
			}
			if ctx.Info().Correlation != "corr-1" {
				t.Errorf("correlation %q", ctx.Info().Correlation)
			}
			c := classification{Category: "billing", Priority: "low"}
			if strings.Contains(in.Body, "urgent") {
				c.Priority = "high"
			}
			if err := ctx.SetStatePatch(map[string]any{"category": c.Category}); err != nil {
				return c, err
			}
			ctx.SetUsage(Usage{Model: "m-1", InputTokens: 10, OutputTokens: 5})
			ctx.Logger().Info("classified", "category", c.Category)
			return c, nil
		}), Input(map[string]any{"subject": "${input.subject}", "body": "${input.body}"})).
		Task("route", Handle(func(ctx StepContext, in map[string]any) (map[string]any, error) {
			var c classification
			if err := ctx.Output("classify", &c); err != nil {
				return nil, err
			}
			var cat string
			if err := ctx.State("category", &cat); err != nil {
				return nil, err
			}
			seen.Store(in)
			return map[string]any{"queue": cat + "-" + c.Priority, "urgent": in["urgent"]}, nil
		}), After("classify"), Input(map[string]any{
			"urgent": "${steps.classify.output.priority == 'high'}",
			"note":   "ticket from ${input.customer}",
		})).
		Wait("approval", "approved", After("route"), Timeout(time.Minute)).
		Sleep("settle", 50*time.Millisecond, After("approval")).
		Task("reply", Handle(func(ctx StepContext, in struct{}) (string, error) {
			var approval struct{ By string }
			if err := ctx.Output("approval", &approval); err != nil {
				return "", err
			}
			return "approved by " + approval.By, nil
		}), After("settle"))

	w := NewWorker(e.c, WithName("w-e2e"), WithConcurrency(2), WithLogger(quiet())).Register(wf)
	serve(t, w)

	ctx := context.Background()
	run := start(t, e.c, "e2e", StartOptions{
		Input:       ticket{Subject: "refund", Body: "urgent: charged twice", Customer: "ana@example.com"},
		Correlation: "corr-1", IdempotencyKey: "ticket-1",
	})
	again := start(t, e.c, "e2e", StartOptions{Input: ticket{}, IdempotencyKey: "ticket-1"})
	if !again.Existed || again.ID != run.ID {
		t.Fatalf("idempotent start: existed=%v id=%s, want %s", again.Existed, again.ID, run.ID)
	}
	eventually(t, 10*time.Second, "the wait step", func() bool {
		r, err := e.c.Get(ctx, run.ID)
		return err == nil && r.Step("approval").Status == "waiting"
	})
	res, err := e.c.SendEvent(ctx, run.ID, Event{Name: "approved", Payload: map[string]string{"by": "lead"}, ID: "ev-1"})
	if err != nil || len(res.Resumed) != 1 {
		t.Fatalf("send event: %+v %v", res, err)
	}
	if res, err := e.c.SendEvent(ctx, run.ID, Event{Name: "approved", ID: "ev-1"}); err != nil || !res.Duplicate {
		t.Fatalf("duplicate event: %+v %v", res, err)
	}
	out, err := Result[string](ctx, e.c, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out != "approved by lead" {
		t.Fatalf("output %q", out)
	}
	r, err := e.c.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RunCompleted || r.StepsDone != 5 || r.StepsTotal != 5 {
		t.Fatalf("run %s %d/%d", r.Status, r.StepsDone, r.StepsTotal)
	}
	if string(r.State["category"]) != `"billing"` {
		t.Fatalf("state %v", r.State)
	}
	if u := r.Step("classify").Usage; u.InputTokens != 10 || u.OutputTokens != 5 || u.Model != "m-1" {
		t.Fatalf("classify usage %+v", u)
	}
	var route map[string]any
	if err := json.Unmarshal(r.Step("route").Output, &route); err != nil || route["queue"] != "billing-high" || route["urgent"] != true {
		t.Fatalf("route output %s", r.Step("route").Output)
	}
	if in := seen.Load().(map[string]any); in["note"] != "ticket from ana@example.com" {
		t.Fatalf("route input %v", in)
	}
	if a := r.Step("classify").Attempts; len(a) != 1 || a[0].Worker != "w-e2e" || a[0].Outcome != "completed" {
		t.Fatalf("attempts %+v", a)
	}
	j, err := e.c.Journal(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	types := map[JournalType]int{}
	for _, x := range j {
		types[x.Type]++
	}
	if types["run_completed"] != 1 || types["step_completed"] != 5 || types["event_received"] != 1 {
		t.Fatalf("journal %v", types)
	}
	// Listing finds it; workers and workflows show what was registered.
	var found bool
	for s, err := range e.c.Runs(ctx, ListOptions{Workflow: "e2e", Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || s.ID == run.ID && s.Status == RunCompleted
	}
	if !found {
		t.Fatal("run not listed")
	}
	ws, err := e.c.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].ID != "w-e2e" || ws[0].Workflows[0] != "e2e@1" {
		t.Fatalf("workers %+v %v", ws, err)
	}
	wfs, err := e.c.Workflows(ctx)
	if err != nil || len(wfs) != 1 || wfs[0].Latest != "1" {
		t.Fatalf("workflows %+v %v", wfs, err)
	}
	def, err := e.c.Workflow(ctx, "e2e", "")
	if err != nil || len(def.Steps) != 5 || def.Deadline.D() != time.Minute {
		t.Fatalf("workflow %+v %v", def, err)
	}
}

func TestClientErrors(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	_, err := e.c.Start(ctx, "nope", StartOptions{})
	if !IsNotFound(err) || !strings.Contains(err.Error(), `workflow "nope" not found`) {
		t.Fatalf("start unknown workflow: %v", err)
	}
	_, err = e.c.Get(ctx, "NOPE")
	if !IsNotFound(err) {
		t.Fatalf("get unknown run: %v", err)
	}
	c, _ := NewClient("http://127.0.0.1:1")
	_, err = c.Get(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "cannot reach cairn") || !temporary(err) {
		t.Fatalf("unreachable: %v", err)
	}
	if _, err := NewClient("ftp://x"); err == nil {
		t.Fatal("ftp URL accepted")
	}

	// A definition registered again with other content is refused.
	h := Handle(func(StepContext, struct{}) (int, error) { return 1, nil })
	w1 := NewWorker(e.c, WithLogger(quiet())).Register(Workflow("conf", "1").Task("a", h))
	stop := serve(t, w1)
	stop()
	w2 := NewWorker(e.c, WithLogger(quiet())).Register(Workflow("conf", "1").Task("a", h).Task("b", h))
	err = w2.Serve(ctx)
	if !IsConflict(err) || !strings.Contains(err.Error(), "already registered with other content") {
		t.Fatalf("conflicting definition: %v", err)
	}
	// An invalid definition never reaches the server.
	w3 := NewWorker(e.c).Register(Workflow("bad", "1").Task("a", h, After("zzz")))
	if err := w3.Serve(ctx); err == nil || !strings.Contains(err.Error(), `unknown step "zzz"`) {
		t.Fatalf("invalid definition: %v", err)
	}
	if err := NewWorker(e.c).Serve(ctx); err == nil {
		t.Fatal("a worker with no workflow served")
	}
	var re *RunError
	if !errors.As((&Run{Run: cairn.Run{ID: "r", Status: RunFailed, Error: &ErrorInfo{Class: "fatal", Message: "boom", Step: "a"}}}).Err(), &re) {
		t.Fatal("RunError")
	}
}

// API keys go as Authorization: Bearer; a worker needs the worker scope,
// a client that starts and reads runs execute and read.
func TestAPIKeys(t *testing.T) {
	keys, err := auth.ParseKeys("wk:worker:" + auth.HashSecret("worker-secret") + ",cl:execute+read:" + auth.HashSecret("client-secret"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, sdktest.Options{Keys: keys}, WithAPIKey("client-secret"))
	h := Handle(func(StepContext, struct{}) (string, error) { return "ok", nil })
	// The client's key cannot serve steps.
	err = NewWorker(e.c, WithLogger(quiet())).Register(Workflow("keyed", "1").Task("a", h)).Serve(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 403 || !strings.Contains(err.Error(), `lacks the "worker" scope`) {
		t.Fatalf("worker with a client key: %v", err)
	}
	serve(t, NewWorker(e.client(t, WithAPIKey("worker-secret")), WithLogger(quiet())).Register(Workflow("keyed", "1").Task("a", h)))
	out, err := Result[string](context.Background(), e.c, start(t, e.c, "keyed", StartOptions{}).ID)
	if err != nil || out != "ok" {
		t.Fatalf("%q %v", out, err)
	}
	_, err = e.client(t).List(context.Background(), ListOptions{})
	if !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("no key: %v", err)
	}
	_, err = e.client(t, WithAPIKey("worker-secret")).Start(context.Background(), "keyed", StartOptions{})
	if !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("worker key starting a run: %v", err)
	}
}

// TestWorkerOnMinIO drives a workflow with a retrying step, a state patch
// and a fan-in to completion through the API on MinIO.
func TestWorkerOnMinIO(t *testing.T) {
	e := newEnv(t, sdktest.Options{Store: storetest.MinIO(t)})
	var tries atomic.Int32
	wf := Workflow("minio-e2e", "1").
		Task("fetch", Handle(func(ctx StepContext, in map[string]any) (map[string]any, error) {
			if tries.Add(1) < 2 {
				return nil, Retryable(errors.New("store warming up"))
			}
			ctx.SetStatePatch(map[string]any{"fetched": true})
			return map[string]any{"n": in["n"]}, nil
		}), Retry(RetryPolicy{MaxAttempts: 3, InitialBackoff: 50 * time.Millisecond})).
		Task("left", Handle(func(ctx StepContext, in map[string]any) (int, error) { return 1, nil }), After("fetch")).
		Task("right", Handle(func(ctx StepContext, in map[string]any) (int, error) { return 2, nil }), After("fetch")).
		Task("sum", Handle(func(ctx StepContext, in map[string]any) (int, error) {
			var l, r int
			if err := ctx.Output("left", &l); err != nil {
				return 0, err
			}
			if err := ctx.Output("right", &r); err != nil {
				return 0, err
			}
			return l + r, nil
		}), After("left", "right"))
	w := NewWorker(e.c, WithName("w-minio"), WithConcurrency(4), WithLogger(quiet())).Register(wf)
	serve(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := e.c.Start(ctx, "minio-e2e", StartOptions{Input: map[string]any{"n": 7}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Result[int](ctx, e.c, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.c.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum != 3 || string(r.State["fetched"]) != "true" || tries.Load() != 2 {
		t.Fatalf("sum %d, state %v, tries %d", sum, r.State, tries.Load())
	}
}

type bigValue struct {
	N   int    `json:"n"`
	Pad string `json:"pad"`
}

func big(n, size int) bigValue { return bigValue{N: n, Pad: strings.Repeat("p", size)} }

// Large values by reference, end to end through the SDK: a 150 KB start
// input reaches a typed body (read through the lease before started), a
// 200 KB output and state value are read by a later step's template and
// through StepContext.Output and State, and the run the client returns
// (the server resolving none of them: ViewResolveBytes 1) holds every
// value itself, the two sinks' output object included.
func TestPayloadsByReferenceEndToEnd(t *testing.T) {
	e := newEnv(t, sdktest.Options{Engine: engine.Config{ViewResolveBytes: 1}})
	wf := Workflow("bigflow", "1").
		Task("first", Handle(func(ctx StepContext, in bigValue) (bigValue, error) {
			if in.N != 1 || len(in.Pad) != 150<<10 {
				return bigValue{}, Fatal(errString("input not resolved"))
			}
			if err := ctx.SetState("blob", big(3, 200<<10)); err != nil {
				return bigValue{}, err
			}
			return big(2, 200<<10), nil
		})).
		Task("second", Handle(func(ctx StepContext, in struct{ N, S int }) (bigValue, error) {
			var out, st bigValue
			if err := ctx.Output("first", &out); err != nil {
				return bigValue{}, Fatal(err)
			}
			if err := ctx.State("blob", &st); err != nil {
				return bigValue{}, Fatal(err)
			}
			if in.N != 2 || in.S != 3 || out.N != 2 || len(out.Pad) != 200<<10 || st.N != 3 || len(st.Pad) != 200<<10 {
				return bigValue{}, Fatal(errString("values by reference not resolved"))
			}
			if o := ctx.Outputs()["first"]; cairn.IsPayloadRefJSON(o) {
				return bigValue{}, Fatal(errString("Outputs holds a reference"))
			}
			return big(4, 100<<10), nil
		}), After("first"), Input(map[string]any{"n": "${steps.first.output.n}", "s": "${state.blob.n}"})).
		Task("third", Handle(func(ctx StepContext, _ struct{}) (bigValue, error) {
			return big(5, 100<<10), nil
		}), After("first"))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "bigflow", StartOptions{Input: big(1, 150<<10)}).ID, 20*time.Second)
	if r.Status != RunCompleted {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	var in, out1, st bigValue
	var sinks map[string]bigValue
	for _, x := range []struct {
		raw json.RawMessage
		v   any
	}{{r.Input, &in}, {r.Step("first").Output, &out1}, {r.State["blob"], &st}, {r.Output, &sinks}} {
		if err := json.Unmarshal(x.raw, x.v); err != nil {
			t.Fatalf("%.80s: %v", x.raw, err)
		}
	}
	if in.N != 1 || out1.N != 2 || st.N != 3 || sinks["second"].N != 4 || sinks["third"].N != 5 || len(sinks["third"].Pad) != 100<<10 {
		t.Fatalf("values: %d %d %d %+v", in.N, out1.N, st.N, len(sinks))
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// A worker that stops gracefully says so: it is listed as gone at once
// (not after the server's alive window, minutes), and alive again once
// it serves again.
func TestStoppedWorkerListedGone(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	wf := Workflow("stopper", "1").Task("a", Handle(func(StepContext, struct{}) (struct{}, error) { return struct{}{}, nil }))
	alive := func() (bool, *time.Time) {
		t.Helper()
		ws, err := e.c.Workers(ctx)
		if err != nil || len(ws) != 1 {
			t.Fatalf("workers %+v %v", ws, err)
		}
		return ws[0].Alive, ws[0].StoppedAt
	}
	stop := serve(t, NewWorker(e.c, WithName("w-stop"), WithLogger(quiet())).Register(wf))
	if a, at := alive(); !a || at != nil {
		t.Fatalf("serving: alive %v, stopped_at %v", a, at)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if a, at := alive(); a || at == nil {
		t.Fatalf("stopped: alive %v, stopped_at %v; want gone at once", a, at)
	}
	serve(t, NewWorker(e.c, WithName("w-stop"), WithLogger(quiet())).Register(wf))
	if a, at := alive(); !a || at != nil {
		t.Fatalf("serving again: alive %v, stopped_at %v", a, at)
	}
	if err := e.c.StopWorker(ctx, "nobody"); !IsNotFound(err) {
		t.Fatalf("stopping an unknown worker: %v, want not found", err)
	}
}

// The input an attempt was given can be read back (audited), as the
// worker got it; an attempt that does not exist is not found.
func TestStepInputReadBack(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	type in struct {
		Who string `json:"who"`
	}
	wf := Workflow("inputs", "1").Task("greet", Handle(func(_ StepContext, x in) (string, error) { return "hi " + x.Who, nil }), Input(map[string]any{"who": "${input.name}"}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	run, err := e.c.Start(ctx, "inputs", StartOptions{Input: map[string]string{"name": "ana"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := e.c.Wait(ctx, run.ID); err != nil || r.Status != RunCompleted {
		t.Fatalf("run %+v %v", r, err)
	}
	got, err := e.c.StepInput(ctx, run.ID, "greet", 1)
	if err != nil || !got.Kept || string(got.Input) != `{"who":"ana"}` || got.Bytes != len(`{"who":"ana"}`) {
		t.Fatalf("input %+v (%s) %v", got, got.Input, err)
	}
	if _, err := e.c.StepInput(ctx, run.ID, "greet", 2); !IsNotFound(err) {
		t.Fatalf("attempt 2: %v, want not found", err)
	}
}
