// Command approval is a worker for the "approval" workflow: an expense is
// prepared, then the run waits (costing nothing) for a person to send an
// "approved" event, up to a day; then the expense is paid or rejected.
//
//	go run ./examples/approval
//	go run ./cmd/cairn runs start approval --input '{"requester":"ana","amount":120.5,"reason":"conference ticket"}'
//	go run ./cmd/cairn runs event <run> approved --payload '{"approved":true,"by":"lead@example.com"}'
//	go run ./cmd/cairn runs watch <run>
package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

// Expense is the run's input, and prepare's output.
type Expense struct {
	Requester string  `json:"requester"`
	Amount    float64 `json:"amount"`
	Reason    string  `json:"reason"`
	Reference string  `json:"reference,omitempty"`
}

// Decision is the payload of the "approved" event: the approval step's
// output.
type Decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
	Note     string `json:"note,omitempty"`
}

// Settlement is the run's output.
type Settlement struct {
	Reference string  `json:"reference"`
	Status    string  `json:"status"`
	Amount    float64 `json:"amount"`
	By        string  `json:"by"`
}

// Workflow is the approval workflow.
func Workflow() *sdk.WorkflowDef {
	return sdk.Workflow("approval", "1").
		Describe("Human approval: prepare an expense, wait for an approved event, settle it.").
		Deadline(48*time.Hour).
		Task("prepare", sdk.Handle(prepare)).
		Wait("approval", "approved", sdk.After("prepare"), sdk.Timeout(24*time.Hour)).
		Task("settle", sdk.Handle(settle), sdk.After("approval"), sdk.Input(map[string]any{
			"expense":  "${steps.prepare.output}",
			"decision": "${steps.approval.output}",
		}))
}

func prepare(ctx sdk.StepContext, e Expense) (Expense, error) {
	e.Reference = "EXP-" + ctx.Info().Run[len(ctx.Info().Run)-6:]
	ctx.Logger().Info("expense waiting for approval", "reference", e.Reference,
		"send", fmt.Sprintf(`cairn runs event %s approved --payload '{"approved":true,"by":"you"}'`, ctx.Info().Run))
	return e, nil
}

func settle(ctx sdk.StepContext, in struct {
	Expense  Expense  `json:"expense"`
	Decision Decision `json:"decision"`
}) (Settlement, error) {
	s := Settlement{Reference: in.Expense.Reference, Amount: in.Expense.Amount, By: in.Decision.By, Status: "rejected"}
	if in.Decision.Approved {
		s.Status = "paid"
	}
	return s, nil
}

func newWorker(c *sdk.Client, log *slog.Logger) *sdk.Worker {
	return sdk.NewWorker(c, sdk.WithLogger(log), sdk.WithLabels(map[string]string{"example": "approval"})).Register(Workflow())
}

// main serves the worker until Ctrl-C, with a client of $CAIRN_SERVER.
func main() { example.Main(newWorker) }
