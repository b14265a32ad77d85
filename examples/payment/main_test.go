package main

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

func TestPayment(t *testing.T) {
	p := NewProvider()
	ctx, c := example.Start(t, 30*time.Second, func(c *sdk.Client, log *slog.Logger) *sdk.Worker { return newWorker(c, p, log) })

	paid := example.StartRun(t, ctx, c, "payment", sdk.StartOptions{IdempotencyKey: "A-1001",
		Input: json.RawMessage(`{"order":"A-1001","items":[{"sku":"book","qty":2,"unit_cents":1500}],"card":"4242"}`)})
	declined := example.StartRun(t, ctx, c, "payment", sdk.StartOptions{
		Input: json.RawMessage(`{"order":"A-1002","items":[{"sku":"pen","qty":1,"unit_cents":300}],"card":"0000"}`)})
	rc, err := sdk.Result[Receipt](ctx, c, paid.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rc.AmountCents != 3000 || rc.ChargeID != "ch_1" || rc.Order != "A-1001" {
		t.Fatalf("receipt %+v", rc)
	}
	r, err := c.Wait(ctx, declined.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != sdk.RunFailed || r.Error.Class != "card_declined" || r.Error.Step != "charge" {
		t.Fatalf("declined run: %s %+v", r.Status, r.Error)
	}
	// Starting the same order again finds the first run: no second charge.
	again, err := c.Start(ctx, "payment", sdk.StartOptions{IdempotencyKey: "A-1001", Input: json.RawMessage(`{}`)})
	if err != nil || !again.Existed || again.ID != paid.ID {
		t.Fatalf("restart: %+v %v", again, err)
	}
	if p.Charges() != 1 {
		t.Fatalf("%d charges", p.Charges())
	}
	ch := r.Step("charge")
	if ch.Attempts[0].StartedAt == nil {
		t.Fatal("an at_most_once attempt ran without a recorded started")
	}
}
