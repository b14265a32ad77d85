package sdk

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Shutdown lets a running body finish, reports it, then returns.
func TestDrainLetsBodiesFinish(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	began, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Int64
	wf := Workflow("drain", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (string, error) {
		close(began)
		select {
		case <-release: // the test lets the body finish once Serve is draining
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		finished.Store(time.Now().UnixNano())
		return "done", nil
	}))
	w := NewWorker(e.c, WithLogger(quiet()), WithDrainTimeout(5*time.Second)).Register(wf)
	stop := serve(t, w)
	run := start(t, e.c, "drain", StartOptions{})
	select {
	case <-began:
	case <-time.After(10 * time.Second):
		t.Fatal("the body did not start within 10 s")
	}
	stopping := make(chan error, 1)
	go func() { stopping <- stop() }()
	// Serve does not return while the body runs: it has 300 ms to do
	// so wrongly (it would at once), with the body held.
	select {
	case err := <-stopping:
		t.Fatalf("Serve returned (%v) while a body ran", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-stopping:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10 s of the body finishing")
	}
	stopped := time.Now()
	if finished.Load() == 0 || time.Unix(0, finished.Load()).After(stopped) {
		t.Fatal("Serve returned before the body finished")
	}
	select {
	case <-w.Ready():
		t.Fatal("Ready stays closed after Serve returned")
	default:
	}
	r, err := e.c.Get(context.Background(), run.ID)
	if err != nil || r.Status != RunCompleted || string(r.Output) != `"done"` {
		t.Fatalf("run %+v %v", r, err)
	}
}

// A body still running at the drain timeout is cancelled with ErrShutdown
// and reported as interrupted; the engine runs the (at_least_once) step
// again on another worker.
func TestDrainTimeoutReleasesBodies(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	began := make(chan struct{}, 1)
	causes := make(chan error, 1)
	def := func() *WorkflowDef {
		return Workflow("stuck", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (string, error) {
			if ctx.Info().Attempt > 1 {
				return "second", nil
			}
			began <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return "", ctx.Err()
		}), Retry(RetryPolicy{InitialBackoff: 10 * time.Millisecond}))
	}
	w := NewWorker(e.c, WithLogger(quiet()), WithDrainTimeout(200*time.Millisecond)).Register(def())
	stop := serve(t, w)
	run := start(t, e.c, "stuck", StartOptions{})
	<-began
	stopWithin(t, stop, 3*time.Second)
	if cause := <-causes; !errors.Is(cause, ErrShutdown) {
		t.Fatalf("cause %v", cause)
	}
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(def()))
	r := waitRun(t, e.c, run.ID, 10*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"second"` {
		t.Fatalf("run %s %s", r.Status, r.Output)
	}
	a := r.Step("s").Attempts[0]
	if a.Outcome != "failed" || a.Error.Class != ClassInterrupted || !strings.Contains(a.Error.Message, "shut down") {
		t.Fatalf("first attempt %+v %+v", a, a.Error)
	}
}

// A panic is recovered, reported with class panic without a stack trace
// (the stack is logged), and the worker keeps serving. An at_least_once
// step is retried.
func TestPanicIsClassPanic(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	logs := &logRecorder{}
	wf := Workflow("panicky", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (int, error) {
		if ctx.Info().Attempt == 1 {
			var m map[string]int
			m["boom"]++ // nil map write
		}
		return 7, nil
	}), Retry(RetryPolicy{InitialBackoff: 10 * time.Millisecond}))
	serve(t, NewWorker(e.c, WithLogger(slogOf(logs))).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "panicky", StartOptions{}).ID, 10*time.Second)
	if r.Status != RunCompleted || string(r.Output) != "7" {
		t.Fatalf("run %s %s", r.Status, r.Output)
	}
	a := r.Step("s").Attempts[0]
	if a.Error == nil || a.Error.Class != ClassPanic || !strings.HasPrefix(a.Error.Message, "panic: assignment to entry in nil map") ||
		strings.Contains(a.Error.Message, "goroutine") || strings.Contains(a.Error.Message, ".go:") {
		t.Fatalf("first attempt error %+v", a.Error)
	}
	if l := logs.find("panicked"); len(l) != 1 || !strings.Contains(l[0], "class panic") || !strings.Contains(l[0], "stack=(") {
		t.Fatalf("the panic was not logged: %q", l)
	}
}

// Error classes: Retryable retries, a Failure listed as non-retryable
// fails the step at once, a plain error is fatal, a timed-out attempt is
// class timeout, an input that does not decode is fatal.
func TestErrorClasses(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	fast := RetryPolicy{InitialBackoff: 10 * time.Millisecond, NonRetryable: []string{"invalid"}}
	var flaky atomic.Int32
	wfs := []*WorkflowDef{
		Workflow("retry", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			if flaky.Add(1) < 3 {
				return 0, Retryable(errors.New("try again"))
			}
			return 3, nil
		}), Retry(RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond})),
		Workflow("typed", "1").Task("s", Handle(func(StepContext, struct{}) (int, error) {
			return 0, Failure("invalid", errors.New("the order has no lines"))
		}), Retry(fast)),
		Workflow("plain", "1").Task("s", Handle(func(StepContext, struct{}) (int, error) {
			return 0, errors.New("plain error")
		}), Retry(fast)),
		Workflow("slow", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), ErrAttemptTimeout) {
				t.Errorf("cause %v", context.Cause(ctx))
			}
			return 0, ctx.Err()
		}), Timeout(200*time.Millisecond), Retry(RetryPolicy{MaxAttempts: 1})),
		Workflow("badinput", "1").Task("s", Handle(func(StepContext, struct{ N int }) (int, error) {
			return 0, nil
		})),
	}
	serve(t, NewWorker(e.c, WithLogger(quiet()), WithConcurrency(8)).Register(wfs...))
	want := map[string]struct {
		status RunStatus
		class  string
		msg    string
	}{
		"retry":    {RunCompleted, "", ""},
		"typed":    {RunFailed, "invalid", "the order has no lines"},
		"plain":    {RunFailed, ClassFatal, "plain error"},
		"slow":     {RunFailed, ClassTimeout, "attempt exceeded its timeout"},
		"badinput": {RunFailed, ClassFatal, "decoding the input of step s"},
	}
	ids := map[string]string{}
	for name := range want {
		o := StartOptions{}
		if name == "badinput" {
			o.Input = map[string]string{"N": "not a number"}
		}
		ids[name] = start(t, e.c, name, o).ID
	}
	for name, w := range want {
		r := waitRun(t, e.c, ids[name], 10*time.Second)
		if r.Status != w.status {
			t.Errorf("%s: status %s, want %s (%+v)", name, r.Status, w.status, r.Error)
			continue
		}
		if w.class == "" {
			continue
		}
		if r.Error == nil || r.Error.Class != w.class || !strings.Contains(r.Error.Message, w.msg) || r.Error.Step != "s" {
			t.Errorf("%s: error %+v, want class %s containing %q", name, r.Error, w.class, w.msg)
		}
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), "step s: "+w.class) {
			t.Errorf("%s: Err() = %v", name, err)
		}
	}
	if got := flaky.Load(); got != 3 {
		t.Errorf("retry ran %d times", got)
	}
}

// Token usage recorded on spans the body opens is summed into the step's
// usage; SetUsage overrides it. The step span is a child of the engine's
// step span (the lease's traceparent).
func TestUsageFromSpans(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	rec, tp := recordSpans(t)
	tracer := tp.Tracer("test")
	var traceparent atomic.Value
	llm := func(ctx context.Context, in, out int64) {
		_, span := tracer.Start(ctx, "chat", trace.WithAttributes(
			attribute.String(AttrRequestModel, "model-a"),
			attribute.Int64(AttrInputTokens, in), attribute.Int64(AttrOutputTokens, out),
			attribute.Int64(AttrCounterPrefix+"searches", 1)))
		span.End()
	}
	wf := Workflow("usage", "1").
		Task("spans", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			traceparent.Store(ctx.Info().TraceParent)
			llm(ctx, 100, 20)
			// A nested span: an agent span with a model call inside.
			actx, agent := tracer.Start(ctx, "agent")
			llm(actx, 5, 1)
			agent.End()
			// A span from an unrelated context counts nothing.
			llm(context.Background(), 1000, 1000)
			return 1, nil
		})).
		Task("explicit", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			llm(ctx, 100, 20)
			ctx.SetUsage(Usage{Model: "model-b", InputTokens: 1, OutputTokens: 2})
			return 2, nil
		}))
	serve(t, NewWorker(e.c, WithLogger(quiet()), WithTracerProvider(tp)).Register(wf))
	t0 := time.Now()
	r := waitRun(t, e.c, start(t, e.c, "usage", StartOptions{}).ID, 10*time.Second)
	t.Logf("run took %v", time.Since(t0))
	if r.Status != RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
	if u := r.Step("spans").Usage; u.InputTokens != 105 || u.OutputTokens != 21 || u.Model != "model-a" || u.Counters["searches"] != 2 {
		t.Fatalf("spans usage %+v", u)
	}
	if u := r.Step("explicit").Usage; u.InputTokens != 1 || u.OutputTokens != 2 || u.Model != "model-b" {
		t.Fatalf("explicit usage %+v", u)
	}
	if u := r.Usage; u.InputTokens != 106 || u.Model != "mixed" || u.Models["model-a"].InputTokens != 105 || u.Models["model-b"].InputTokens != 1 {
		t.Fatalf("run usage %+v", u)
	}
	tp.ForceFlush(context.Background())
	tpStr := traceparent.Load().(string)
	parts := strings.Split(tpStr, "-")
	var stepSpan sdktrace.ReadOnlySpan
	var chats int
	// The step span ends when the worker has its complete answered, which
	// may be just after the client saw the run end.
	eventually(t, 5*time.Second, "the step span and the four chat spans", func() bool {
		stepSpan, chats = nil, 0
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "step usage/spans":
				stepSpan = s
			case "chat":
				chats++
			}
		}
		return stepSpan != nil && chats == 4
	})
	if stepSpan.Parent().TraceID().String() != parts[1] || stepSpan.Parent().SpanID().String() != parts[2] || !stepSpan.Parent().IsRemote() {
		t.Fatalf("step span parent %v, lease traceparent %s", stepSpan.Parent(), tpStr)
	}
	if stepSpan.SpanContext().TraceID().String() != parts[1] {
		t.Fatal("the step span is not in the run's trace")
	}
}

// A body whose spans used two models reports their usage per model, and
// the engine prices each with its price book: on the attempt, the step and
// the run. (Before, the usage was summed under the model "mixed", which no
// price book prices: $0.)
func TestUsageTwoModelsPriced(t *testing.T) {
	prices := cairn.PriceBook{
		"model-big":   {InputPerMillion: 3, OutputPerMillion: 15},
		"model-small": {InputPerMillion: 0.25, OutputPerMillion: 1.25},
	}
	e := newEnv(t, sdktest.Options{Engine: engine.Config{Prices: prices}})
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer("test")
	llm := func(ctx context.Context, model string, in, out int64) {
		_, span := tracer.Start(ctx, "chat "+model, trace.WithAttributes(
			attribute.String(AttrRequestModel, model),
			attribute.Int64(AttrInputTokens, in), attribute.Int64(AttrOutputTokens, out)))
		span.End()
	}
	wf := Workflow("usage2", "1").
		Task("agent", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			llm(ctx, "model-small", 20000, 1000) // route
			llm(ctx, "model-big", 10000, 2000)   // answer
			llm(ctx, "model-small", 5000, 500)   // check
			return 1, nil
		})).
		Task("summary", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			llm(ctx, "model-big", 1000, 100)
			return 2, nil
		}), After("agent"))
	serve(t, NewWorker(e.c, WithLogger(quiet()), WithTracerProvider(tp)).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "usage2", StartOptions{}).ID, 10*time.Second)
	if r.Status != RunCompleted {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	cost := func(model string, in, out int64) float64 {
		p := prices[model]
		return float64(in)*p.InputPerMillion/1e6 + float64(out)*p.OutputPerMillion/1e6
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	small, big := cost("model-small", 25000, 1500), cost("model-big", 10000, 2000)
	agent := r.Step("agent")
	for name, u := range map[string]Usage{"step": agent.Usage, "attempt": *agent.Attempts[0].Usage} {
		if u.Model != cairn.MixedModels || u.InputTokens != 35000 || u.OutputTokens != 3500 || len(u.Models) != 2 ||
			u.Models["model-small"].InputTokens != 25000 || u.Models["model-big"].OutputTokens != 2000 ||
			!near(u.Models["model-small"].CostUSD, small) || !near(u.Models["model-big"].CostUSD, big) || !near(u.CostUSD, small+big) {
			t.Fatalf("agent %s usage %+v, want $%g + $%g", name, u, small, big)
		}
	}
	if u := r.Step("summary").Usage; u.Model != "model-big" || u.Models != nil || !near(u.CostUSD, cost("model-big", 1000, 100)) {
		t.Fatalf("summary usage %+v", u)
	}
	bigAll := cost("model-big", 11000, 2100)
	if u := r.Usage; u.Model != cairn.MixedModels || u.InputTokens != 36000 || !near(u.Models["model-big"].CostUSD, bigAll) ||
		!near(u.Models["model-small"].CostUSD, small) || !near(u.CostUSD, small+bigAll) || u.CostUSD < 0.05 {
		t.Fatalf("run usage %+v, want $%g", u, small+bigAll)
	}
}
