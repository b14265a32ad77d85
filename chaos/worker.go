package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/sdk"
)

// Environment of a chaos worker process.
const (
	envServer  = "CHAOS_SERVER"
	envName    = "CHAOS_WORKER"
	envExecLog = "CHAOS_EXECLOG"
	envHistory = "CHAOS_HISTORY"
)

// WorkerMain runs a chaos worker process: an SDK worker serving the chaos
// workflows, logging each body's execution and each worker call. It
// returns the process's exit code.
func WorkerMain() int {
	name := os.Getenv(envName)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	el, err := openExecLog(os.Getenv(envExecLog))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	hf, err := os.OpenFile(os.Getenv(envHistory), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rec := &recorder{next: http.DefaultTransport, worker: name, f: hf}
	c, err := sdk.NewClient(os.Getenv(envServer), sdk.WithHTTPClient(&http.Client{Transport: rec}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w := sdk.NewWorker(c, sdk.WithName(name), sdk.WithConcurrency(8), sdk.WithLogger(log),
		sdk.WithClaimWait(2*time.Second), sdk.WithDrainTimeout(5*time.Second)).
		Register(defs(el, name)...)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	for {
		err := w.Serve(ctx)
		if ctx.Err() != nil {
			return 0
		}
		// The API instance may be down (killed by the driver): try again.
		log.Warn("serve ended; retrying", "err", err)
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return 0
		}
	}
}
