// Command triage is a worker for the "triage" workflow: a support ticket is
// classified and its customer looked up (in parallel), then routed to a
// queue, and a reply is drafted. It shows input templates (CEL ${…} over
// the run input and earlier outputs), a state patch, and token usage
// summed from an OpenTelemetry span. It also serves "triage-fn", the same
// work written as a durable function (ordinary code, checkpointed).
//
//	make run                      # the dev server, in another terminal
//	go run ./examples/triage      # this worker
//	go run ./cmd/cairn runs start triage --wait \
//	  --input '{"subject":"Charged twice","body":"URGENT: I was charged twice for my order","customer":"ana@bigcorp.com"}'
//	go run ./cmd/cairn runs start triage-fn --wait --input '…the same…'
package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

// Ticket is the run's input.
type Ticket struct {
	Subject  string `json:"subject"`
	Body     string `json:"body"`
	Customer string `json:"customer"`
}

// Classification is classify's output.
type Classification struct {
	Category string `json:"category"`
	Priority string `json:"priority"`
}

// Customer is lookup_customer's output.
type Customer struct {
	Email string `json:"email"`
	Tier  string `json:"tier"`
}

// RouteIn is route's input, rendered by the engine from earlier outputs.
type RouteIn struct {
	Category string `json:"category"`
	Urgent   bool   `json:"urgent"`
	Tier     string `json:"tier"`
}

// Route is route's output.
type Route struct {
	Queue    string `json:"queue"`
	SLAHours int    `json:"sla_hours"`
}

// DraftIn is draft_reply's input.
type DraftIn struct {
	Greeting string `json:"greeting"`
	Queue    string `json:"queue"`
	SLAHours int    `json:"sla_hours"`
	Subject  string `json:"subject"`
}

// Reply is draft_reply's output, and so the run's.
type Reply struct {
	Queue string `json:"queue"`
	Text  string `json:"text"`
}

// Workflow is the triage workflow. Change its steps and bump the version:
// a registered version is immutable.
func Workflow() *sdk.WorkflowDef {
	return sdk.Workflow("triage", "1").
		Describe("Support-ticket triage: classify, look up the customer, route, draft a reply.").
		Task("classify", sdk.Handle(classify), sdk.Input(map[string]any{
			"text": "${input.subject + '\\n' + input.body}",
		})).
		Task("lookup_customer", sdk.Handle(lookupCustomer), sdk.Input("${input.customer}")).
		Task("route", sdk.Handle(route), sdk.After("classify", "lookup_customer"), sdk.Input(map[string]any{
			"category": "${steps.classify.output.category}",
			"urgent":   "${steps.classify.output.priority == 'high'}",
			"tier":     "${steps.lookup_customer.output.tier}",
		})).
		Task("draft_reply", sdk.Handle(draftReply), sdk.After("route"), sdk.Input(map[string]any{
			"greeting":  "Hi ${input.customer},",
			"queue":     "${steps.route.output.queue}",
			"sla_hours": "${steps.route.output.sla_hours}",
			"subject":   "${input.subject}",
		}), sdk.Retry(sdk.RetryPolicy{MaxAttempts: 5}))
}

func classify(ctx sdk.StepContext, in struct{ Text string }) (Classification, error) {
	c := classifyText(in.Text)
	// The run state keeps what later steps and people want at hand.
	if err := ctx.SetStatePatch(map[string]any{"category": c.Category, "priority": c.Priority}); err != nil {
		return c, err
	}
	ctx.Logger().Info("classified", "category", c.Category, "priority", c.Priority)
	return c, nil
}

// classifyText is classify's logic: a stand-in for a model call.
func classifyText(text string) Classification {
	text = strings.ToLower(text)
	c := Classification{Category: "other", Priority: "normal"}
	switch {
	case strings.Contains(text, "charge") || strings.Contains(text, "refund") || strings.Contains(text, "invoice"):
		c.Category = "billing"
	case strings.Contains(text, "error") || strings.Contains(text, "crash") || strings.Contains(text, "bug"):
		c.Category = "bug"
	case strings.Contains(text, "password") || strings.Contains(text, "login"):
		c.Category = "account"
	}
	if strings.Contains(text, "urgent") || strings.Contains(text, "down") {
		c.Priority = "high"
	}
	return c
}

func lookupCustomer(ctx sdk.StepContext, email string) (Customer, error) {
	return customerOf(email), nil
}

// customerOf is lookup_customer's logic: a stand-in for a CRM call.
func customerOf(email string) Customer {
	tier := "standard"
	if strings.HasSuffix(email, "@bigcorp.com") {
		tier = "gold"
	}
	return Customer{Email: email, Tier: tier}
}

func route(ctx sdk.StepContext, in RouteIn) (Route, error) {
	r := routeOf(in)
	if err := ctx.SetState("queue", r.Queue); err != nil {
		return r, err
	}
	return r, nil
}

// routeOf is route's logic.
func routeOf(in RouteIn) Route {
	r := Route{Queue: in.Category, SLAHours: 48}
	if in.Urgent || in.Tier == "gold" {
		r.Queue += "-priority"
		r.SLAHours = 4
	}
	return r
}

var tracer = otel.Tracer("github.com/cairn-dev/cairn/examples/triage")

func draftReply(ctx sdk.StepContext, in DraftIn) (Reply, error) { return draft(ctx, in), nil }

// draft is draft_reply's logic.
func draft(ctx context.Context, in DraftIn) Reply {
	// A stand-in for a model call. The span carries gen_ai usage
	// attributes; the worker sums them into the step's usage, which the
	// engine prices and shows on the run.
	prompt := fmt.Sprintf("Draft a reply about %q for queue %s", in.Subject, in.Queue)
	_, span := tracer.Start(ctx, "chat draft-model", trace.WithAttributes(attribute.String("gen_ai.request.model", "draft-model")))
	text := fmt.Sprintf("%s thanks for reaching out about %q. Your ticket is with our %s team; expect an answer within %d hours.",
		in.Greeting, in.Subject, in.Queue, in.SLAHours)
	span.SetAttributes(
		attribute.Int("gen_ai.usage.input_tokens", len(strings.Fields(prompt))),
		attribute.Int("gen_ai.usage.output_tokens", len(strings.Fields(text))),
	)
	span.End()
	return Reply{Queue: in.Queue, Text: text}
}

// FunctionWorkflow is the same triage written as a durable function:
// ordinary code whose steps are checkpointed in the bucket, so a crash
// or a deploy resumes it after the last step that completed. The two
// lookups run one after the other here (the DAG runs them in parallel).
func FunctionWorkflow() *sdk.WorkflowDef {
	return sdk.Function("triage-fn", "1", func(fc *sdk.Durable, t Ticket) (Reply, error) {
		c, err := sdk.Step(fc, "classify", func(context.Context) (Classification, error) {
			return classifyText(t.Subject + "\n" + t.Body), nil
		})
		if err != nil {
			return Reply{}, err
		}
		cust, err := sdk.Step(fc, "lookup_customer", func(context.Context) (Customer, error) { return customerOf(t.Customer), nil })
		if err != nil {
			return Reply{}, err
		}
		r := routeOf(RouteIn{Category: c.Category, Urgent: c.Priority == "high", Tier: cust.Tier}) // pure: no step needed
		return sdk.Step(fc, "draft_reply", func(ctx context.Context) (Reply, error) {
			return draft(ctx, DraftIn{Greeting: "Hi " + t.Customer + ",", Queue: r.Queue, SLAHours: r.SLAHours, Subject: t.Subject}), nil
		}, sdk.Retry(sdk.RetryPolicy{MaxAttempts: 5}))
	}).Describe("Support-ticket triage as a durable function: the same steps as triage, written as code.")
}

// newWorker returns a worker serving the workflow.
func newWorker(c *sdk.Client, log *slog.Logger) *sdk.Worker {
	return sdk.NewWorker(c, sdk.WithConcurrency(8), sdk.WithLogger(log), sdk.WithLabels(map[string]string{"example": "triage"})).
		Register(Workflow(), FunctionWorkflow())
}

// main serves the worker until Ctrl-C, with a client of $CAIRN_SERVER.
func main() {
	// An SDK tracer provider, so spans are recorded and their token usage
	// summed (add an exporter to see them in a tracing backend).
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(tp)
	example.Main(newWorker)
}
