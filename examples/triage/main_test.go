package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// The README quickstart as a test: a dev server (in-process here, `make
// run` there), this example's worker, and the documented run.
func TestQuickstart(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	t.Setenv("CAIRN_SERVER", srv.URL)
	tp := sdktrace.NewTracerProvider() // as main does
	otel.SetTracerProvider(tp)
	defer tp.Shutdown(context.Background())

	c, err := sdk.ClientFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	w := newWorker(c, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatal(err)
	}

	// cairn runs start triage --wait --input '…'
	input := `{"subject":"Charged twice","body":"URGENT: I was charged twice for my order","customer":"ana@bigcorp.com"}`
	run, err := c.Start(ctx, "triage", sdk.StartOptions{Input: json.RawMessage(input)})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	reply, err := sdk.Result[Reply](wctx, c, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Queue != "billing-priority" || !strings.Contains(reply.Text, "Hi ana@bigcorp.com,") || !strings.Contains(reply.Text, "within 4 hours") {
		t.Fatalf("reply %+v", reply)
	}
	r, err := c.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.State["category"]) != `"billing"` || string(r.State["priority"]) != `"high"` || string(r.State["queue"]) != `"billing-priority"` {
		t.Fatalf("state %v", r.State)
	}
	if u := r.Step("draft_reply").Usage; u.Model != "draft-model" || u.InputTokens == 0 || u.OutputTokens == 0 {
		t.Fatalf("draft_reply usage %+v", u)
	}
	if r.StepsDone != 4 {
		t.Fatalf("%d steps done", r.StepsDone)
	}

	// The same ticket through the durable function: the same reply, and
	// its three steps in the run's history.
	fn, err := c.Start(ctx, "triage-fn", sdk.StartOptions{Input: json.RawMessage(input)})
	if err != nil {
		t.Fatal(err)
	}
	same, err := sdk.Result[Reply](wctx, c, fn.ID)
	if err != nil || same != reply {
		t.Fatalf("the function's reply %+v, %v; the DAG's %+v", same, err, reply)
	}
	if r, err = c.Get(ctx, fn.ID); err != nil || len(r.Step("main").Operations) != 3 {
		t.Fatalf("the function's run: %v %+v", err, r)
	}
}
