// Command payment is a worker for the "payment" workflow: an order is
// priced, the card is charged in an at_most_once step (once its body has
// started, a lost lease fails the step rather than charging again), and a
// receipt is issued. The charge passes the step's idempotency key, stable
// across attempts, to the payment provider, which dedupes on it: the
// belt to at_most_once's braces.
//
//	go run ./examples/payment
//	go run ./cmd/cairn runs start payment --input '{"order":"A-1001","items":[{"sku":"book","qty":2,"unit_cents":1500}],"card":"4242"}' --wait
//	go run ./cmd/cairn runs start payment --input '{"order":"A-1002","items":[{"sku":"pen","qty":1,"unit_cents":300}],"card":"0000"}' --wait   # declined
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

// Order is the run's input.
type Order struct {
	Order string `json:"order"`
	Items []struct {
		SKU       string `json:"sku"`
		Qty       int    `json:"qty"`
		UnitCents int    `json:"unit_cents"`
	} `json:"items"`
	Card string `json:"card"`
}

// Quote is quote's output.
type Quote struct {
	TotalCents int `json:"total_cents"`
}

// Charge is charge's output.
type Charge struct {
	ChargeID    string `json:"charge_id"`
	AmountCents int    `json:"amount_cents"`
	Replayed    bool   `json:"replayed"`
}

// Receipt is the run's output.
type Receipt struct {
	Order       string `json:"order"`
	ChargeID    string `json:"charge_id"`
	AmountCents int    `json:"amount_cents"`
	Text        string `json:"text"`
}

// Workflow is the payment workflow.
func Workflow(p *Provider) *sdk.WorkflowDef {
	return sdk.Workflow("payment", "1").
		Describe("An at_most_once charge with an idempotency key.").
		Task("quote", sdk.Handle(quote)).
		Task("charge", sdk.Handle(p.charge), sdk.After("quote"), sdk.AtMostOnce(), sdk.Timeout(30*time.Second),
			sdk.Input(map[string]any{"card": "${input.card}", "amount_cents": "${steps.quote.output.total_cents}"}),
			sdk.Retry(sdk.RetryPolicy{NonRetryable: []string{"card_declined"}})).
		Task("receipt", sdk.Handle(receipt), sdk.After("charge"), sdk.Input(map[string]any{
			"order":  "${input.order}",
			"charge": "${steps.charge.output}",
		}))
}

func quote(ctx sdk.StepContext, o Order) (Quote, error) {
	if len(o.Items) == 0 {
		return Quote{}, sdk.Fatal(errors.New("the order has no items"))
	}
	var q Quote
	for _, it := range o.Items {
		q.TotalCents += it.Qty * it.UnitCents
	}
	return q, nil
}

func receipt(ctx sdk.StepContext, in struct {
	Order  string `json:"order"`
	Charge Charge `json:"charge"`
}) (Receipt, error) {
	return Receipt{Order: in.Order, ChargeID: in.Charge.ChargeID, AmountCents: in.Charge.AmountCents,
		Text: fmt.Sprintf("Order %s: charged %d.%02d (charge %s)", in.Order, in.Charge.AmountCents/100, in.Charge.AmountCents%100, in.Charge.ChargeID)}, nil
}

// Provider stands in for a payment provider that dedupes charges by
// idempotency key, as real ones do.
type Provider struct {
	mu      sync.Mutex
	charges map[string]Charge
}

// NewProvider returns an empty provider.
func NewProvider() *Provider { return &Provider{charges: map[string]Charge{}} }

// Charges returns how many distinct charges were made.
func (p *Provider) Charges() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.charges)
}

func (p *Provider) charge(ctx sdk.StepContext, in struct {
	Card        string `json:"card"`
	AmountCents int    `json:"amount_cents"`
}) (Charge, error) {
	if in.Card == "0000" {
		return Charge{}, sdk.Failure("card_declined", errors.New("the card was declined"))
	}
	key := ctx.IdempotencyKey()
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.charges[key]; ok {
		c.Replayed = true
		return c, nil
	}
	c := Charge{ChargeID: fmt.Sprintf("ch_%d", len(p.charges)+1), AmountCents: in.AmountCents}
	p.charges[key] = c
	ctx.Logger().Info("card charged", "charge", c.ChargeID, "amount_cents", c.AmountCents, "idempotency_key", key)
	return c, nil
}

func newWorker(c *sdk.Client, p *Provider, log *slog.Logger) *sdk.Worker {
	return sdk.NewWorker(c, sdk.WithLogger(log), sdk.WithLabels(map[string]string{"example": "payment"})).Register(Workflow(p))
}

// main serves the worker until Ctrl-C, with a client of $CAIRN_SERVER.
func main() {
	example.Main(func(c *sdk.Client, log *slog.Logger) *sdk.Worker { return newWorker(c, NewProvider(), log) })
}
