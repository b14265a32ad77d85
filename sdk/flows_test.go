package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/internal/storetest"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Map over 1,000 items through the API, on the file store and MinIO: at
// most max_concurrency bodies run at once, every item's retry is its own,
// and the collected output is in input order.
func TestMapOverHTTP(t *testing.T) {
	for name, opts := range map[string]func(t *testing.T) sdktest.Options{
		"file":  func(*testing.T) sdktest.Options { return sdktest.Options{} },
		"minio": func(t *testing.T) sdktest.Options { return sdktest.Options{Store: storetest.MinIO(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, opts(t))
			var running, peak, retried atomic.Int64
			wf := Workflow("fan", "1").
				Task("list", Handle(func(_ StepContext, in struct{ N int }) (map[string]any, error) {
					xs := make([]int, in.N)
					for i := range xs {
						xs[i] = i
					}
					return map[string]any{"xs": xs}, nil
				})).
				Map("square", "${steps.list.output.xs}", Handle(func(ctx StepContext, in struct{ X, I int }) (int, error) {
					cur := running.Add(1)
					defer running.Add(-1)
					for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
					}
					if ctx.Info().Item != in.I {
						return 0, Fatal(fmt.Errorf("item %d has index %d", ctx.Info().Item, in.I))
					}
					if in.X%97 == 0 && ctx.Info().Attempt == 1 {
						retried.Add(1)
						return 0, Retryable(errors.New("flaky"))
					}
					time.Sleep(time.Millisecond)
					return in.X * in.X, nil
				}), After("list"), MaxConcurrency(20), Input(map[string]any{"x": "${item}", "i": "${index}"}),
					Retry(RetryPolicy{MaxAttempts: 2, InitialBackoff: 10 * time.Millisecond}))
			serve(t, NewWorker(e.c, WithConcurrency(32), WithLogger(quiet())).Register(wf))
			began := time.Now()
			r := waitRun(t, e.c, start(t, e.c, "fan", StartOptions{Input: map[string]int{"n": 1000}}).ID, 3*time.Minute)
			if r.Status != RunCompleted {
				t.Fatalf("run %s %+v", r.Status, r.Error)
			}
			var out []int
			if err := json.Unmarshal(r.Output, &out); err != nil || len(out) != 1000 {
				t.Fatalf("output of %d: %v", len(out), err)
			}
			for i, v := range out {
				if v != i*i {
					t.Fatalf("output[%d] = %d", i, v)
				}
			}
			if p := peak.Load(); p > 20 || p < 2 {
				t.Fatalf("%d items ran at once, max_concurrency 20", p)
			}
			if retried.Load() != 11 {
				t.Fatalf("%d items retried", retried.Load())
			}
			m := r.Step("square").Map
			if m == nil || m.Total != 1000 || m.Completed != 1000 || m.Running != 0 {
				t.Fatalf("progress %+v", m)
			}
			t.Logf("%s: 1,000 items in %v", name, time.Since(began).Round(time.Millisecond))
		})
	}
}

func TestMapItemFailureOverHTTP(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	for _, c := range []struct {
		version string
		opt     StepOption
		want    RunStatus
	}{{"strict", MaxConcurrency(5), RunFailed}, {"lenient", ToleratedFailurePercent(5), RunCompleted}} {
		wf := Workflow("items", c.version).
			Map("each", "input.xs", Handle(func(_ StepContext, x int) (int, error) {
				if x == 13 {
					return 0, Fatal(errors.New("unlucky"))
				}
				return x, nil
			}), c.opt)
		serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
		xs := make([]int, 40)
		for i := range xs {
			xs[i] = i
		}
		r := waitRun(t, e.c, start(t, e.c, "items", StartOptions{Version: c.version, Input: map[string]any{"xs": xs}}).ID, time.Minute)
		if r.Status != c.want {
			t.Fatalf("%s: run %s %+v", c.version, r.Status, r.Error)
		}
		m := r.Step("each").Map
		if m.Failed != 1 || len(m.Errors) != 1 || m.Errors[0].Step != "each.13" {
			t.Fatalf("%s: progress %+v", c.version, m)
		}
		if c.want == RunCompleted && !strings.Contains(string(r.Output), ",12,null,14,") {
			t.Fatalf("output %s", r.Output)
		}
		if c.want == RunFailed && (r.Error.Step != "each" || !strings.Contains(r.Error.Message, "item 13")) {
			t.Fatalf("error %+v", r.Error)
		}
	}
}

func childWorkflows(ship Handler) (*WorkflowDef, *WorkflowDef) {
	parent := Workflow("order", "1").
		Task("take", Handle(func(_ StepContext, in map[string]any) (map[string]any, error) { return in, nil })).
		Child("ship", "shipment", After("take"), Input(map[string]any{"sku": "${steps.take.output.sku}"})).
		Task("confirm", Handle(func(ctx StepContext, in map[string]any) (string, error) {
			var s map[string]string
			if err := ctx.Output("ship", &s); err != nil {
				return "", err
			}
			return "shipped " + s["tracking"], nil
		}), After("ship"))
	child := Workflow("shipment", "1").Task("label", ship)
	return parent, child
}

func TestChildRunOverHTTP(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	block := make(chan struct{})
	parent, child := childWorkflows(Handle(func(ctx StepContext, in map[string]string) (map[string]string, error) {
		switch in["sku"] {
		case "gone":
			return nil, Fatal(errors.New("discontinued"))
		case "slow":
			select {
			case <-block:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		return map[string]string{"tracking": "T-" + in["sku"]}, nil
	}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(parent, child))
	defer close(block)
	ctx := context.Background()

	r := waitRun(t, e.c, start(t, e.c, "order", StartOptions{Input: map[string]string{"sku": "a1"}}).ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"shipped T-a1"` {
		t.Fatalf("run %s %s %+v", r.Status, r.Output, r.Error)
	}
	c, err := e.c.Get(ctx, r.Step("ship").Child)
	if err != nil || c.Parent != r.ID || c.Status != RunCompleted {
		t.Fatalf("child %+v %v", c, err)
	}

	r = waitRun(t, e.c, start(t, e.c, "order", StartOptions{Input: map[string]string{"sku": "gone"}}).ID, 30*time.Second)
	if r.Status != RunFailed || r.Error.Step != "ship" || r.Error.Class != ClassFatal || !strings.Contains(r.Error.Message, "discontinued") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}

	run := start(t, e.c, "order", StartOptions{Input: map[string]string{"sku": "slow"}}).ID
	var childID string
	eventually(t, 30*time.Second, "the child runs", func() bool {
		p, err := e.c.Get(ctx, run)
		if err != nil {
			return false
		}
		childID = p.Step("ship").Child
		return childID != ""
	})
	if _, err := e.c.Cancel(ctx, run, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	if c := waitRun(t, e.c, childID, 30*time.Second); c.Status != RunCancelled {
		t.Fatalf("child %s", c.Status)
	}
}

func TestCompensationOverHTTP(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var released atomic.Value
	wf := Workflow("book", "1").
		Task("hold", Handle(func(StepContext, struct{}) (string, error) { return "seat-12", nil })).
		Task("pay", Handle(func(StepContext, struct{}) (string, error) { return "", Fatal(errors.New("card declined")) }), After("hold")).
		OnFailure("release", Handle(func(ctx StepContext, in map[string]string) (string, error) {
			released.Store(in["seat"])
			return "released", nil
		}), Input(map[string]any{"seat": "${steps.hold.output}"}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "book", StartOptions{}).ID, 30*time.Second)
	if r.Status != RunFailed || r.Error.Step != "pay" || r.Compensation == nil || r.Compensation.Status != cairn.CompensationCompleted {
		t.Fatalf("run %s %+v %+v", r.Status, r.Error, r.Compensation)
	}
	if released.Load() != "seat-12" || string(r.Step("release").Output) != `"released"` {
		t.Fatalf("released %v, step %+v", released.Load(), r.Step("release"))
	}
}

// Registration errors name the step and the field.
func TestFlowValidationNamesTheField(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	bad := Workflow("bad", "1").Map("m", "", Handle(func(StepContext, int) (int, error) { return 0, nil }))
	if _, err := bad.Definition(); err == nil || !strings.Contains(err.Error(), "steps[0].items") {
		t.Fatalf("local check: %v", err)
	}
	// The server compiles expressions: a bad one is refused at
	// registration, naming the step's field.
	bad = Workflow("bad", "1").Map("m", "${nope(", Handle(func(StepContext, int) (int, error) { return 0, nil }))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := NewWorker(e.c, WithLogger(quiet())).Register(bad).Serve(ctx)
	if err == nil || !strings.Contains(err.Error(), "steps[0].items") {
		t.Fatalf("server check: %v", err)
	}
}

// TestFlowBuilder: the builder's flow options land in the definition, and
// misuse is refused.
func TestFlowBuilder(t *testing.T) {
	d := Workflow("f", "1").Concurrency("", 10).Concurrency("${input.tenant}", 2)
	d.add(cairn.Step{ID: "call", Kind: cairn.KindTask}, []StepOption{Concurrency("${input.customer}", 5), RateLimit("${input.api}", 100, time.Minute), Priority(7)})
	w, err := d.Definition()
	if err != nil {
		t.Fatal(err)
	}
	s := w.Step("call")
	if len(w.Concurrency) != 2 || w.Concurrency[1].Key != "${input.tenant}" || s.Concurrency == nil || s.Concurrency.Limit != 5 ||
		s.RateLimit == nil || s.RateLimit.Limit != 100 || s.RateLimit.Period.D() != time.Minute || s.Priority == nil || *s.Priority != 7 {
		t.Fatalf("definition %+v, step %+v", w, s)
	}
	bad := Workflow("g", "1")
	bad.add(cairn.Step{ID: "s", Kind: cairn.KindTask}, []StepOption{Priority(500)})
	if _, err := bad.Definition(); err == nil {
		t.Fatal("priority 500 accepted")
	}
}

// TestFlowOverHTTP: a run's priority, and a bulk cancel through the SDK
// against a real server.
func TestFlowOverHTTP(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, sdktest.Options{})
	reg, err := e.c.API().RegisterWorkerWithBodyWithResponse(ctx, "application/json",
		strings.NewReader(`{"worker_id":"w","workflows":[{"name":"bulk","version":"1","concurrency":[{"limit":3}],"steps":[{"id":"only","concurrency":{"key":"${input.c}","limit":1},"priority":5}]}]}`))
	if err := e.c.check(err, reg); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 5 {
		r, err := e.c.Start(ctx, "bulk", StartOptions{Input: map[string]int{"c": i}, Priority: i - 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Priority != i-2 {
			t.Fatalf("run priority %d, want %d", r.Priority, i-2)
		}
		ids = append(ids, r.ID)
	}
	var ae *APIError
	if _, err := e.c.Start(ctx, "bulk", StartOptions{Priority: 101}); !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity {
		t.Fatalf("priority 101: %v", err)
	}
	if _, err := e.c.StartBatch(ctx, BatchCancel, BatchFilter{}, ""); !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || !strings.Contains(ae.Error(), "filter") {
		t.Fatalf("empty filter: %v", err)
	}
	b, err := e.c.StartBatch(ctx, BatchCancel, BatchFilter{Workflow: "bulk", Status: []cairn.RunStatus{cairn.RunRunning}}, "bulk test")
	if err != nil {
		t.Fatal(err)
	}
	b, err = e.c.WaitBatch(ctx, b.ID, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Done() || b.Matched != 5 || b.Applied != 5 {
		t.Fatalf("batch %+v", b)
	}
	for _, id := range ids {
		r, err := e.c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != cairn.RunCancelled {
			t.Fatalf("run %s is %s", id, r.Status)
		}
	}
}

// When over HTTP: the branch not taken never reaches a worker, the join
// runs, and the run view says skipped.
func TestWhenBranches(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var refunds, rejects atomic.Int32
	wf := Workflow("refund", "1").
		Task("check", Handle(func(_ StepContext, in struct{ Amount int }) (map[string]bool, error) {
			return map[string]bool{"eligible": in.Amount < 100}, nil
		})).
		Task("refund", Handle(func(StepContext, struct{}) (string, error) { refunds.Add(1); return "refunded", nil }),
			After("check"), When("steps.check.output.eligible")).
		Task("reject", Handle(func(StepContext, struct{}) (string, error) { rejects.Add(1); return "rejected", nil }),
			After("check"), When("!steps.check.output.eligible")).
		Task("reply", Handle(func(_ StepContext, in map[string]string) (string, error) { return in["outcome"], nil }),
			After("refund", "reject"), Input(map[string]any{"outcome": "${has(steps.refund) ? steps.refund.output : steps.reject.output}"}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "refund", StartOptions{Input: map[string]int{"amount": 250}}).ID, 10*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"rejected"` {
		t.Fatalf("run %s output %s %+v", r.Status, r.Output, r.Error)
	}
	if refunds.Load() != 0 || rejects.Load() != 1 {
		t.Fatalf("refund ran %d, reject ran %d", refunds.Load(), rejects.Load())
	}
	if s := r.Step("refund"); s.Status != StepSkipped || len(s.Attempts) != 0 {
		t.Fatalf("refund step %+v", s)
	}
	if r.StepsDone != 4 || r.StepsTotal != 4 {
		t.Fatalf("steps %d/%d", r.StepsDone, r.StepsTotal)
	}
}
