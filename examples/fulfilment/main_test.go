package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

func TestFulfilment(t *testing.T) {
	ctx, c := example.Start(t, time.Minute, newWorker)

	lines := []Line{{"tea", 2}, {"cup", 1}, {"pot", 1}, {"spoon", 4}, {"tray", 1}, {"cosy", 1}}
	run := example.StartRun(t, ctx, c, "fulfilment", sdk.StartOptions{Input: Order{ID: "o-1", Card: "4242", Lines: lines}})
	shipped, err := sdk.Result[Shipped](ctx, c, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if shipped.Tracking != "TRK-O-1" || shipped.Parcels != len(lines) {
		t.Fatalf("shipped %+v", shipped)
	}
	r, err := c.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var res []Reservation
	json.Unmarshal(r.Step("reserve").Output, &res)
	if len(res) != len(lines) || res[3].SKU != "spoon" || res[3].Hold != "H-o-1-3" {
		t.Fatalf("reservations %s", r.Step("reserve").Output)
	}
	if child, err := c.Get(ctx, r.Step("ship").Child); err != nil || child.Workflow != "shipment" || child.Parent != run.ID {
		t.Fatalf("child %+v %v", child, err)
	}

	// A declined card: the run fails with card_declined, and the
	// compensation releases the reservations; nothing was charged.
	run = example.StartRun(t, ctx, c, "fulfilment", sdk.StartOptions{Input: Order{ID: "o-2", Card: "declined", Lines: lines[:2]}})
	r, err = c.Wait(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != sdk.RunFailed || r.Error.Class != "card_declined" || r.Compensation == nil || r.Compensation.Status != cairn.CompensationCompleted {
		t.Fatalf("run %s %+v %+v", r.Status, r.Error, r.Compensation)
	}
	if got := string(r.Step("release").Output); got != `{"holds":["H-o-2-0","H-o-2-1"]}` {
		t.Fatalf("released %s", got)
	}
	if got := string(r.Step("refund").Output); got != `"nothing charged"` {
		t.Fatalf("refund %s", got)
	}

	// A line out of stock fails its item (not retried: out_of_stock is
	// non-retryable), the map and the run; the compensation runs. A failed
	// map has no output, so release sees no reservations: a real saga
	// would release by order id, or keep holds in the run state.
	run = example.StartRun(t, ctx, c, "fulfilment", sdk.StartOptions{Input: Order{ID: "o-3", Card: "4242", Lines: []Line{{"tea", 1}, {OutOfStock, 1}}}})
	r, err = c.Wait(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != sdk.RunFailed || r.Error.Step != "reserve" || r.Error.Class != "out_of_stock" || r.Compensation.Status != cairn.CompensationCompleted {
		t.Fatalf("run %s %+v %+v", r.Status, r.Error, r.Compensation)
	}
	if got := string(r.Step("release").Output); got != `{"holds":[]}` {
		t.Fatalf("released %s", got)
	}
}
