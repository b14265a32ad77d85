package sdk

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestPublishStartsTriggeredRuns: a workflow defined with On gets a run
// for a published event its condition holds on, with the payload as
// input and the event on the run, once per event id; its WaitAny step
// says which event came.
func TestPublishStartsTriggeredRuns(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	wf := Workflow("on-order", "1").On("order.created", "event.payload.total > 100").
		Task("ack", Handle(func(ctx StepContext, in map[string]any) (any, error) { return in["total"], nil })).
		WaitAny("decide", []string{"approve", "reject"}, After("ack"), If("event.payload.by != ''"), Timeout(time.Minute))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	ctx := context.Background()
	if res, err := e.c.Publish(ctx, "order.created", map[string]int{"total": 5}, PublishOptions{}); err != nil || len(res.Runs) != 0 || res.ID == "" {
		t.Fatalf("a small order: %+v %v", res, err)
	}
	res, err := e.c.Publish(ctx, "order.created", map[string]int{"total": 500}, PublishOptions{ID: "o1"})
	if err != nil || len(res.Runs) != 1 || res.Runs[0].Workflow != "on-order" || res.Runs[0].Existed {
		t.Fatalf("a big order: %+v %v", res, err)
	}
	again, err := e.c.Publish(ctx, "order.created", map[string]int{"total": 500}, PublishOptions{ID: "o1"})
	if err != nil || len(again.Runs) != 1 || !again.Runs[0].Existed || again.Runs[0].Run != res.Runs[0].Run {
		t.Fatalf("a retried publish: %+v %v", again, err)
	}
	id := res.Runs[0].Run
	eventually(t, 10*time.Second, "the wait step", func() bool {
		r, err := e.c.Get(ctx, id)
		return err == nil && r.Step("decide").Status == "waiting"
	})
	if _, err := e.c.SendEvent(ctx, id, Event{Name: "reject", Payload: map[string]string{"by": "ann"}, ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e.c, id, 10*time.Second)
	if r.Event == nil || r.Event.Name != "order.created" || r.Event.ID != "o1" || string(r.Output) != `{"event":"reject","id":"r1","payload":{"by":"ann"}}` {
		t.Fatalf("run %s: event %+v, output %s", r.Status, r.Event, r.Output)
	}
}
