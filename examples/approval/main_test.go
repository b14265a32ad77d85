package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

func TestApproval(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	w := newWorker(c, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	<-w.Ready()

	run, err := c.Start(ctx, "approval", sdk.StartOptions{Input: Expense{Requester: "ana", Amount: 120.5, Reason: "conference"}})
	if err != nil {
		t.Fatal(err)
	}
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
	if waiting, err = c.Get(ctx, run.ID); err != nil {
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
