package main

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

func TestApproval(t *testing.T) {
	ctx, c := example.Start(t, 30*time.Second, newWorker)

	run := example.StartRun(t, ctx, c, "approval", sdk.StartOptions{Input: Expense{Requester: "ana", Amount: 120.5, Reason: "conference"}})
	// The run waits for the event, at no cost. Follow its progress (a long
	// poll the server answers at each change) until the wait has begun.
	wctx, stop := context.WithCancel(ctx)
	var waiting *sdk.Run
	c.Watch(wctx, run.ID, func(r *sdk.Run) {
		if s := r.Step("approval"); s.Status == "waiting" && waiting == nil {
			waiting = r
			stop()
		}
	})
	stop()
	if waiting == nil {
		t.Fatal("the run never waited for the approval")
	}
	// Progress carries statuses only; the whole run has the wait's timeout.
	waiting, err := c.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s := waiting.Step("approval"); s.WakeAt == nil || time.Until(*s.WakeAt) < 23*time.Hour {
		t.Fatalf("wait timeout %v", s.WakeAt)
	}
	// cairn runs event <run> approved --payload '{"approved":true,"by":"lead@example.com"}'
	res, err := c.SendEvent(ctx, run.ID, sdk.Event{Name: "approved", Payload: Decision{Approved: true, By: "lead@example.com"}})
	if err != nil || len(res.Resumed) != 1 || res.Resumed[0] != "approval" {
		t.Fatalf("event: %+v %v", res, err)
	}
	s, err := sdk.Result[Settlement](ctx, c, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != "paid" || s.By != "lead@example.com" || s.Amount != 120.5 || s.Reference == "" {
		t.Fatalf("settlement %+v", s)
	}
}
