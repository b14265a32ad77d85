// Command goworker is the Go half of the TypeScript SDK's mixed-fleet
// tests: it serves step "a" of workflow "mixed" and refuses step "b" as
// unservable, which the TypeScript worker serves
// (sdk/ts/src/test/mixed.test.ts), and serves the durable function
// "mixed-fn", whose attempts alternate between this worker and the
// TypeScript one, each replaying what the other recorded
// (sdk/ts/src/test/function-mixed.test.ts), and the durable function
// "go-invoker", which runs the workflow "ts-billing" that only the
// TypeScript worker serves.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/sdk"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := sdk.ClientFromEnv()
	if err != nil {
		log.Error("client", "err", err)
		os.Exit(1)
	}
	wf := sdk.Workflow("mixed", "1").
		Task("a", sdk.Handle(func(ctx sdk.StepContext, in struct{ N int }) (map[string]any, error) {
			return map[string]any{"by": "go", "n": in.N * 2}, nil
		})).
		Task("b", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (any, error) {
			return nil, sdk.Failure("unservable", errors.New("step b is served by the TypeScript worker"))
		}), sdk.After("a"), sdk.Input("${steps.a.output}"))
	w := sdk.NewWorker(c, sdk.WithName("go-worker"), sdk.WithLogger(log)).Register(wf, mixedFunction(), invoker())
	go func() { <-w.Ready(); os.Stdout.WriteString("ready\n") }()
	if err := w.Serve(ctx); err != nil {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}

// mixedOut is the output of the function "mixed-fn".
type mixedOut struct {
	ID     string    `json:"id"`
	Now    time.Time `json:"now"`
	Random float64   `json:"random"`
	Charge any       `json:"charge"`
	Ship   any       `json:"ship"`
	Finish any       `json:"finish"`
}

// mixedFunction is the function "mixed-fn" as the TypeScript test writes
// it, operation for operation; its steps say which language ran them.
// Each sleep suspends it, so each attempt may run on another worker.
func mixedFunction() *sdk.WorkflowDef {
	by := func(context.Context) (map[string]any, error) { return map[string]any{"by": "go"}, nil }
	return sdk.Function("mixed-fn", "1", func(fc *sdk.Durable, in struct {
		N int `json:"n"`
	}) (mixedOut, error) {
		out := mixedOut{ID: fc.UUID(), Now: fc.Now(), Random: fc.Random()}
		var err error
		if out.Charge, err = sdk.Step(fc, "charge", func(context.Context) (map[string]any, error) {
			return map[string]any{"by": "go", "n": in.N * 2}, nil
		}); err != nil {
			return out, err
		}
		if err := fc.Sleep("nap", 2500*time.Millisecond); err != nil {
			return out, err
		}
		if out.Ship, err = sdk.Step(fc, "ship", by); err != nil {
			return out, err
		}
		if err := fc.Sleep("nap", 2500*time.Millisecond); err != nil {
			return out, err
		}
		out.Finish, err = sdk.Step(fc, "finish", by)
		return out, err
	})
}

// invoker is the function "go-invoker": it invokes "ts-billing" (a DAG
// the TypeScript test registers and serves) with its input and returns
// what it returned, or its error's class.
func invoker() *sdk.WorkflowDef {
	return sdk.Function("go-invoker", "1", func(fc *sdk.Durable, in map[string]any) (map[string]any, error) {
		out, err := sdk.Invoke[map[string]any](fc, "bill", sdk.Call{Workflow: "ts-billing", Input: in})
		if err != nil {
			return map[string]any{"class": sdk.ClassOf(err)}, nil
		}
		return out, nil
	})
}
