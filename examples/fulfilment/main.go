// Command fulfilment is a worker for an order-fulfilment saga:
//
//   - validate the order;
//   - reserve stock for every order line, at most 4 at a time (a map step);
//   - charge the card;
//   - ship it: a child run of the "shipment" workflow (label, pickup),
//     whose output is the tracking number;
//   - and when anything fails, compensate (on_failure): release the
//     reservations that were made, refund a charge that went through.
//
// The run of a failed order ends failed with the original error; its
// compensation says how the clean-up went.
//
//	go run ./examples/fulfilment
//	go run ./cmd/cairn runs start fulfilment --input '{"id":"o-1","card":"4242","lines":[{"sku":"tea","qty":2},{"sku":"cup","qty":1}]}'
//	go run ./cmd/cairn runs start fulfilment --input '{"id":"o-2","card":"declined","lines":[{"sku":"tea","qty":1}]}'
//	go run ./cmd/cairn runs watch <run>
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

// Order is the run's input.
type Order struct {
	ID    string `json:"id"`
	Card  string `json:"card"`
	Lines []Line `json:"lines"`
}

// Line is one order line: the map's element.
type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Reservation is a reserved line: the map's output per element.
type Reservation struct {
	SKU  string `json:"sku"`
	Qty  int    `json:"qty"`
	Hold string `json:"hold"`
}

// Charge is the charge step's output.
type Charge struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// Shipped is the shipment's (and the order's) output.
type Shipped struct {
	Tracking string `json:"tracking"`
	Parcels  int    `json:"parcels"`
}

// Workflows are the fulfilment saga and the shipment it starts.
func Workflows() []*sdk.WorkflowDef {
	fulfilment := sdk.Workflow("fulfilment", "1").
		Describe("Order fulfilment saga: reserve each line, charge, ship (a child run); compensate on failure.").
		Task("validate", sdk.Handle(validate)).
		Map("reserve", "steps.validate.output.lines", sdk.Handle(reserve), sdk.After("validate"),
			sdk.MaxConcurrency(4), sdk.Input(map[string]any{"order": "${input.id}", "line": "${item}", "n": "${index}"}),
			sdk.Retry(sdk.RetryPolicy{MaxAttempts: 3, NonRetryable: []string{"out_of_stock"}})).
		Task("charge", sdk.Handle(charge), sdk.After("reserve"),
			sdk.Input(map[string]any{"card": "${input.card}", "reserved": "${steps.reserve.output}"})).
		Child("ship", "shipment", sdk.After("charge"),
			sdk.Input(map[string]any{"order": "${input.id}", "lines": "${steps.reserve.output}"})).
		Task("confirm", sdk.Handle(confirm), sdk.After("ship"), sdk.Input("${steps.ship.output}")).
		OnFailure("release", sdk.Handle(release),
			sdk.Input(map[string]any{"reserved": "${has(steps.reserve) ? steps.reserve.output : []}"})).
		OnFailure("refund", sdk.Handle(refund), sdk.After("release"),
			sdk.Input(map[string]any{"charge": "${has(steps.charge) ? steps.charge.output : null}"}))
	shipment := sdk.Workflow("shipment", "1").
		Describe("Ship an order: print a label, book a pickup.").
		Task("label", sdk.Handle(label)).
		Task("pickup", sdk.Handle(pickup), sdk.After("label"), sdk.Input("${steps.label.output}"))
	return []*sdk.WorkflowDef{fulfilment, shipment}
}

func validate(_ sdk.StepContext, o Order) (Order, error) {
	if len(o.Lines) == 0 {
		return o, sdk.Fatal(errors.New("an order needs lines"))
	}
	return o, nil
}

// OutOfStock is the SKU the warehouse never has.
const OutOfStock = "unobtainium"

func reserve(ctx sdk.StepContext, in struct {
	Order string `json:"order"`
	Line  Line   `json:"line"`
	N     int    `json:"n"`
}) (Reservation, error) {
	if in.Line.SKU == OutOfStock {
		return Reservation{}, sdk.Failure("out_of_stock", fmt.Errorf("no %s left", in.Line.SKU))
	}
	return Reservation{SKU: in.Line.SKU, Qty: in.Line.Qty, Hold: fmt.Sprintf("H-%s-%d", in.Order, in.N)}, nil
}

func charge(_ sdk.StepContext, in struct {
	Card     string        `json:"card"`
	Reserved []Reservation `json:"reserved"`
}) (Charge, error) {
	if in.Card == "declined" {
		return Charge{}, sdk.Failure("card_declined", errors.New("the card was declined"))
	}
	amount := 0
	for _, r := range in.Reserved {
		amount += 5 * r.Qty
	}
	return Charge{ID: "ch-" + in.Card, Amount: amount}, nil
}

func label(_ sdk.StepContext, in struct {
	Order string        `json:"order"`
	Lines []Reservation `json:"lines"`
}) (Shipped, error) {
	return Shipped{Tracking: "TRK-" + strings.ToUpper(in.Order), Parcels: len(in.Lines)}, nil
}

func pickup(_ sdk.StepContext, s Shipped) (Shipped, error) { return s, nil }

func confirm(_ sdk.StepContext, s Shipped) (Shipped, error) { return s, nil }

// Released is what the compensation undid.
type Released struct {
	Holds []string `json:"holds"`
}

func release(ctx sdk.StepContext, in struct {
	Reserved []*Reservation `json:"reserved"`
}) (Released, error) {
	out := Released{Holds: []string{}}
	for _, r := range in.Reserved {
		if r != nil {
			out.Holds = append(out.Holds, r.Hold)
		}
	}
	ctx.Logger().Info("released reservations", "holds", out.Holds)
	return out, nil
}

func refund(ctx sdk.StepContext, in struct {
	Charge *Charge `json:"charge"`
}) (string, error) {
	if in.Charge == nil {
		return "nothing charged", nil
	}
	return "refunded " + in.Charge.ID, nil
}

func newWorker(c *sdk.Client, log *slog.Logger) *sdk.Worker {
	return sdk.NewWorker(c, sdk.WithLogger(log), sdk.WithLabels(map[string]string{"example": "fulfilment"})).Register(Workflows()...)
}

// main serves the worker until Ctrl-C, with a client of $CAIRN_SERVER.
func main() { example.Main(newWorker) }
