package telemetry_test

// The telemetry of runs served end to end: the metrics they produce and
// their traces, over one telemetered store.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
	"github.com/cairn-dev/cairn/telemetry"
	"github.com/cairn-dev/cairn/telemetry/otelsetup"
)

// Two runs — one whose first step fails once and is retried, one whose
// only step fails for good — and a claim refused because its run ended
// produce exactly the counters they should.
func TestRunsProduceTheirMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	srv := newTelemetered(t, nil, mp).start(t)
	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ok := failsOnce("ok", "try again")
	doomed := sdk.Workflow("doomed", "1").
		Task("s", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (string, error) {
			return "", sdk.Fatal(errors.New("no"))
		}))
	stop := testutil.ServeWorker(t, sdk.NewWorker(c, sdk.WithName("w1"), sdk.WithClaimWait(time.Second)).Register(ok, doomed), 10*time.Second)
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	r1, err := c.Start(wctx, "ok", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(wctx, r1.ID); err != nil || r.Status != sdk.RunCompleted {
		t.Fatalf("ok: %+v %v", r, err)
	}
	r2, err := c.Start(wctx, "doomed", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(wctx, r2.ID); err != nil || r.Status != sdk.RunFailed {
		t.Fatalf("doomed: %+v %v", r, err)
	}
	// A claim scoped to an ended run is refused: 409 run_terminal.
	resp, err := http.Post(srv.URL+"/v1/api/steps/claim", "application/json",
		bytes.NewReader([]byte(`{"worker_id":"w1","run":"`+r2.ID+`","wait_ms":0}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("claim on an ended run: %d, want 409", resp.StatusCode)
	}
	stop()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := []count{
		{telemetry.MetricRunsStarted, kv("workflow", "ok"), 1},
		{telemetry.MetricRunsStarted, kv("workflow", "doomed"), 1},
		{telemetry.MetricRunsEnded, kv("workflow", "ok", "status", "completed"), 1},
		{telemetry.MetricRunsEnded, kv("workflow", "doomed", "status", "failed"), 1},
		{telemetry.MetricAttemptsEnded, kv("outcome", "completed"), 2},
		{telemetry.MetricAttemptsEnded, kv("workflow", "ok", "outcome", "failed", "class", "retryable"), 1},
		{telemetry.MetricAttemptsEnded, kv("workflow", "doomed", "outcome", "failed", "class", "fatal"), 1},
		{telemetry.MetricRetried, kv("workflow", "ok", "class", "retryable"), 1},
		{telemetry.MetricDeadLettered, kv("workflow", "doomed", "class", "fatal"), 1},
		{telemetry.MetricDeadLettered, kv("workflow", "ok"), 0},
		{telemetry.MetricRequeued, nil, 0},
		{telemetry.MetricLost, nil, 0},
		{telemetry.MetricLeases, nil, 4},
		{telemetry.MetricRejections, kv("op", "claimSteps", "reason", "run_terminal"), 1},
		{telemetry.MetricRejections, nil, 1},
	}
	for _, w := range want {
		if got := sum(rm, w.name, w.attrs); got != w.n {
			t.Errorf("%s%v = %d, want %d", w.name, w.attrs, got, w.n)
		}
	}
	atLeast := []count{
		{telemetry.MetricClaims, kv("result", "held"), 1},
		{telemetry.MetricClaims, kv("result", "error"), 1},
		{telemetry.MetricBlobRequests, kv("op", "create", "class", "put", "result", "ok"), 6}, // 2 runs, 4 leases
		{telemetry.MetricBlobRequests, kv("op", "swap", "class", "put", "result", "ok"), 4},
		{telemetry.MetricBlobRequests, kv("class", "get"), 1},
		{telemetry.MetricCommitBatch, nil, 4}, // one count per write: at least one per attempt's end
		{telemetry.MetricRequests, kv("op", "startRun", "status", 201), 2},
		{telemetry.MetricReapDuration, nil, 1},
		{telemetry.MetricWakeLatency, nil, 1}, // the claims a hint woke
	}
	for _, w := range atLeast {
		if got := sum(rm, w.name, w.attrs); got < w.n {
			t.Errorf("%s%v = %d, want at least %d", w.name, w.attrs, got, w.n)
		}
	}
	// Every wake is a lease granted by a claim (not every lease is a
	// wake: a complete's claim_next and the fallback scan have no hint).
	if woke, granted := sum(rm, telemetry.MetricWakeLatency, nil), sum(rm, telemetry.MetricLeases, nil); woke > granted {
		t.Errorf("%d wakes for %d leases granted", woke, granted)
	}
	// No claim is in progress once the worker stopped: the gauge comes
	// back to 0 (the server ends a held claim when its caller hangs up).
	testutil.Eventually(t, 5*time.Second, telemetry.MetricClaimsWaiting+" back to 0 after the worker stopped", func() (bool, string) {
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		n := sum(rm, telemetry.MetricClaimsWaiting, nil)
		return n == 0, fmt.Sprintf("%s = %d", telemetry.MetricClaimsWaiting, n)
	})
}

// count is how many data points (or histogram counts) a metric has
// with attributes that include attrs.
type count struct {
	name  string
	attrs []attribute.KeyValue
	n     int64
}

func kv(pairs ...any) []attribute.KeyValue {
	var out []attribute.KeyValue
	for i := 0; i < len(pairs); i += 2 {
		k := pairs[i].(string)
		switch v := pairs[i+1].(type) {
		case string:
			out = append(out, attribute.String(k, v))
		case int:
			out = append(out, attribute.Int(k, v))
		}
	}
	return out
}

// sum adds the data points of the named counter (or the counts of the
// named histogram) whose attributes include attrs.
func sum(rm metricdata.ResourceMetrics, name string, attrs []attribute.KeyValue) int64 {
	var n int64
	match := func(set attribute.Set) bool {
		for _, a := range attrs {
			if v, ok := set.Value(a.Key); !ok || v != a.Value {
				return false
			}
		}
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += int64(p.Count)
					}
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += int64(p.Count)
					}
				}
			}
		}
	}
	return n
}

// One run, started on API instance A by a traced caller and worked through
// API instance B (two engines on one bucket) by a traced worker, is one
// trace: caller → POST /runs server span → run span → one span per
// attempt (the failed first attempt of a included) → the worker's body
// span of that attempt. The run and attempt spans are recorded by
// whichever instance saw them end, under the ids the lease named.
func TestOneTracePerRunAcrossInstances(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	serverTP := otelsetup.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := newTelemetered(t, serverTP, nil)
	a, b := f.start(t), f.start(t)

	callerTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	workerTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ca, err := sdk.NewClient(a.URL) // sends the context's span as traceparent
	if err != nil {
		t.Fatal(err)
	}
	cb, err := sdk.NewClient(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	wf := failsOnce("traced", "first attempt fails")
	testutil.ServeWorker(t, sdk.NewWorker(cb, sdk.WithTracerProvider(workerTP), sdk.WithClaimWait(time.Second)).Register(wf), 10*time.Second)

	callerCtx, caller := callerTP.Tracer("caller").Start(context.Background(), "caller")
	run, err := ca.Start(callerCtx, "traced", sdk.StartOptions{})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if r, err := ca.Wait(wctx, run.ID); err != nil || r.Status != sdk.RunCompleted {
		t.Fatalf("run: %+v %v", r, err)
	}

	tid := caller.SpanContext().TraceID()
	// The run's last spans end after its outcome is committed.
	var spans tracetest.SpanStubs
	testutil.Eventually(t, 10*time.Second, "the spans of step b and of the run", func() (bool, string) {
		spans = nil
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == tid {
				spans = append(spans, s)
			}
		}
		return len(find(spans, "step traced/b")) == 1 && len(find(spans, "run traced")) == 1, "trace: " + names(spans)
	})
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		f := find(spans, name)
		if len(f) != 1 {
			t.Fatalf("%d spans named %q in the run's trace, want 1; trace: %s", len(f), name, names(spans))
		}
		return f[0]
	}
	post := one("POST /v1/api/runs")
	if post.Parent.SpanID() != caller.SpanContext().SpanID() {
		t.Errorf("POST /runs span's parent is %v, want the caller's span", post.Parent.SpanID())
	}
	runSpan := one("run traced")
	if runSpan.Parent.SpanID() != post.SpanContext.SpanID() {
		t.Errorf("run span's parent is %v, want the POST /runs span", runSpan.Parent.SpanID())
	}
	attempts := find(spans, "attempt a")
	attempts = append(attempts, find(spans, "attempt b")...)
	if len(attempts) != 3 {
		t.Fatalf("%d attempt spans, want 3 (a#1 failed, a#2, b#1); trace: %s", len(attempts), names(spans))
	}
	bodies := append(find(spans, "step traced/a"), find(spans, "step traced/b")...)
	if len(bodies) != 3 {
		t.Fatalf("%d worker body spans, want 3; trace: %s", len(bodies), names(spans))
	}
	for _, at := range attempts {
		if at.Parent.SpanID() != runSpan.SpanContext.SpanID() {
			t.Errorf("%s: parent %v, want the run span", at.Name, at.Parent.SpanID())
		}
		if !at.StartTime.Before(at.EndTime) {
			t.Errorf("%s: starts %v, ends %v", at.Name, at.StartTime, at.EndTime)
		}
		kids := 0
		for _, body := range bodies {
			if body.Parent.SpanID() == at.SpanContext.SpanID() {
				kids++
				// The body span also covers the worker's report, so it
				// may end after the engine recorded the attempt's end.
				if body.StartTime.Before(at.StartTime) || body.StartTime.After(at.EndTime) {
					t.Errorf("%s: body span starts %v, outside the attempt's %v–%v", at.Name, body.StartTime, at.StartTime, at.EndTime)
				}
			}
		}
		if kids != 1 {
			t.Errorf("%s (%v): %d worker body spans under it, want 1", at.Name, attr(at, "cairn.attempt"), kids)
		}
	}
	failed := 0
	for _, at := range find(spans, "attempt a") {
		if attr(at, "cairn.outcome") == "failed" {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed attempts of a, want 1", failed)
	}
	// The store requests of POST /runs are its children, by op class and
	// key prefix only.
	blobKids := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "blob ") && s.Parent.SpanID() == post.SpanContext.SpanID() {
			blobKids++
			if p := attr(s, "cairn.blob.prefix"); strings.Contains(p, run.ID) {
				t.Errorf("blob span names a full key: %q", p)
			}
		}
	}
	if blobKids == 0 {
		t.Errorf("no blob spans under POST /runs; trace: %s", names(spans))
	}
}

// A durable function that suspends (a sleep) is one trace too: a span per
// attempt (the suspended one included), the span of each try of a step
// under its attempt's body span, and a span for the time it was
// suspended, from the suspended attempt's end to the next one's claim.
func TestFunctionSuspensionsAreSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	f := newTelemetered(t, otelsetup.NewTracerProvider(sdktrace.WithSyncer(exp)), nil)
	srv := sdktest.Start(t, sdktest.Options{Store: telemetry.WrapBucket(f.store, f.tel), Engine: engine.Config{Telemetry: f.tel}, ReapEvery: 50 * time.Millisecond})
	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	wf := sdk.Function("napper", "1", func(fc *sdk.Durable, _ struct{}) (string, error) {
		if _, err := sdk.Step(fc, "before", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return "", err
		}
		if err := fc.Sleep("nap", 3*time.Second); err != nil { // longer than an inline sleep: suspends
			return "", err
		}
		return "rested", nil
	})
	workerTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	testutil.ServeWorker(t, sdk.NewWorker(c, sdk.WithTracerProvider(workerTP), sdk.WithClaimWait(time.Second)).Register(wf), 10*time.Second)
	run, err := c.Start(context.Background(), "napper", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	r, err := c.Wait(wctx, run.ID)
	if err != nil || r.Status != sdk.RunCompleted {
		t.Fatalf("run: %+v %v", r, err)
	}
	var spans tracetest.SpanStubs
	testutil.Eventually(t, 10*time.Second, "the run's spans", func() (bool, string) {
		spans = nil
		for _, s := range exp.GetSpans() {
			if attr(s, "cairn.run") == run.ID || s.Name == "operation /before#0" {
				spans = append(spans, s)
			}
		}
		return len(find(spans, "run napper")) == 1 && len(find(spans, "attempt main")) == 2 && len(find(spans, "suspended main")) == 1, "trace: " + names(spans)
	})
	sus := find(spans, "suspended main")[0]
	a1, a2 := r.Step("main").Attempts[0], r.Step("main").Attempts[1]
	if a1.Outcome != "suspended" || !sus.StartTime.Equal(*a1.EndedAt) || !sus.EndTime.Equal(*a2.ClaimedAt) || sus.EndTime.Sub(sus.StartTime) < 2*time.Second {
		t.Fatalf("suspended span %v–%v; attempts %+v %+v", sus.StartTime, sus.EndTime, a1, a2)
	}
	if runSpan := find(spans, "run napper")[0]; sus.Parent.SpanID() != runSpan.SpanContext.SpanID() || attr(sus, "cairn.attempt") != "1" {
		t.Fatalf("suspended span's parent %v attempt %s", sus.Parent.SpanID(), attr(sus, "cairn.attempt"))
	}
	outcomes := map[string]bool{}
	for _, at := range find(spans, "attempt main") {
		outcomes[attr(at, "cairn.outcome")] = true
	}
	if !outcomes["suspended"] || !outcomes["completed"] || len(find(spans, "operation /before#0")) != 1 {
		t.Fatalf("attempt outcomes %v; trace: %s", outcomes, names(spans))
	}
}

func find(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func names(spans tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.Name + "(" + s.SpanContext.SpanID().String() + "←" + s.Parent.SpanID().String() + ") ")
	}
	return b.String()
}

func attr(s tracetest.SpanStub, k string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == k {
			return a.Value.Emit()
		}
	}
	return ""
}

// telemetered is the telemetry of tp and mp (either may be nil) and a
// file bucket whose requests it records: start runs an API instance on
// them, as many as a test wants on the one bucket.
type telemetered struct {
	tel   *telemetry.T
	store *blob.Bucket
}

func newTelemetered(t *testing.T, tp trace.TracerProvider, mp metric.MeterProvider) *telemetered {
	t.Helper()
	tel, err := telemetry.New(tp, mp)
	if err != nil {
		t.Fatal(err)
	}
	store, err := file.New(t.TempDir(), file.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return &telemetered{tel: tel, store: store}
}

func (f *telemetered) start(t *testing.T) *sdktest.Server {
	return sdktest.Start(t, sdktest.Options{Store: telemetry.WrapBucket(f.store, f.tel), Engine: engine.Config{Telemetry: f.tel}})
}

// failsOnce is a workflow of two steps: a, which fails retryably with
// msg on its first attempt and returns "A" on its second, and b after it.
func failsOnce(name, msg string) *sdk.WorkflowDef {
	var once sync.Once
	return sdk.Workflow(name, "1").
		Task("a", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (string, error) {
			failed := false
			once.Do(func() { failed = true })
			if failed {
				return "", sdk.Retryable(errors.New(msg))
			}
			return "A", nil
		}), sdk.Retry(sdk.RetryPolicy{InitialBackoff: 10 * time.Millisecond})).
		Task("b", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (string, error) { return "B", nil }), sdk.After("a"))
}
