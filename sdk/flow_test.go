package sdk

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

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
