// Package example holds what every example program does alike, so that
// each example's main.go shows only its workflow and its worker: Main runs
// the worker as a program, Start serves it in a test.
package example

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// NewWorker builds an example's worker on a client, logging to log.
type NewWorker func(c *sdk.Client, log *slog.Logger) *sdk.Worker

// Main serves the worker newWorker builds, with a client of $CAIRN_SERVER
// (and the key in $CAIRN_KEY, see sdk.ClientFromEnv), until SIGINT or
// SIGTERM. It logs to stderr and exits with status 1 when the client
// cannot be made or the worker stops on an error.
func Main(newWorker NewWorker) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := sdk.ClientFromEnv()
	if err != nil {
		log.Error("cairn client", "err", err)
		os.Exit(1)
	}
	if err := newWorker(c, log).Serve(ctx); err != nil {
		log.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}

// Start starts a server in the test process (sdktest), and the worker
// newWorker builds on a client of it, and returns once the worker is
// registered: a context that ends after timeout, and the client. When the
// test ends the worker stops, and an error it stopped on fails the test.
func Start(t testing.TB, timeout time.Duration, newWorker NewWorker) (context.Context, *sdk.Client) {
	t.Helper()
	srv := sdktest.Start(t, sdktest.Options{})
	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	w := newWorker(c, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	select {
	case <-w.Ready():
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("worker: %v", err)
	}
	return ctx, c
}

// StartRun starts a run of workflow with c, failing the test if it cannot.
func StartRun(t testing.TB, ctx context.Context, c *sdk.Client, workflow string, o sdk.StartOptions) *sdk.Run {
	t.Helper()
	r, err := c.Start(ctx, workflow, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
