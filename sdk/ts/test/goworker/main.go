// Command goworker is the Go half of the TypeScript SDK's mixed-fleet test
// (sdk/ts/src/test/mixed.test.ts): it serves step "a" of workflow "mixed"
// and refuses step "b" as unservable, which the TypeScript worker serves.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

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
	w := sdk.NewWorker(c, sdk.WithName("go-worker"), sdk.WithLogger(log)).Register(wf)
	go func() { <-w.Ready(); os.Stdout.WriteString("ready\n") }()
	if err := w.Serve(ctx); err != nil {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
