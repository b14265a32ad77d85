package telemetry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/telemetry/otelsetup"
)

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
