// Command gocodec is the Go half of the Python SDK's client-side encryption
// test (sdk/python/tests/test_encryption.py): with the keyring of the file
// $CAIRN_KEYRING it serves step "a" of the encrypted workflow "codec-mixed"
// and refuses step "b" as unservable, which the Python worker serves. It
// says "ready" once registered.
package main

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"context"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/codec"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ring, err := codec.LoadKeyring(os.Getenv("CAIRN_KEYRING"))
	if err != nil {
		log.Error("keyring", "err", err)
		os.Exit(1)
	}
	c, err := sdk.ClientFromEnv(sdk.WithCodec(ring))
	if err != nil {
		log.Error("client", "err", err)
		os.Exit(1)
	}
	type in struct {
		Card   map[string]any `json:"card"`
		Tenant string         `json:"tenant"`
	}
	wf := sdk.Workflow("codec-mixed", "1").Encrypted("tenant").
		Task("a", sdk.Handle(func(ctx sdk.StepContext, x in) (map[string]any, error) {
			return map[string]any{"by": "go", "card": x.Card, "tenant": x.Tenant, "secret": "go-secret-marker"}, nil
		}), sdk.Input(map[string]any{"card": "${input.card}", "tenant": "${input.tenant}"})).
		Task("b", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (any, error) {
			return nil, sdk.Failure("unservable", errors.New("step b is served by the Python worker"))
		}), sdk.After("a"), sdk.Input("${steps.a.output}"))
	w := sdk.NewWorker(c, sdk.WithName("go-codec-worker"), sdk.WithLogger(log)).Register(wf)
	go func() { <-w.Ready(); os.Stdout.WriteString("ready\n") }()
	if err := w.Serve(ctx); err != nil {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
