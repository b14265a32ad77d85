// Command reaper is cairn's scheduled function: each invocation runs one
// reaper pass (engine.Reap) over the bucket named by CAIRN_BLOB — expire
// lost leases, fire sleeps, wait timeouts and deadlines, re-announce
// unclaimed work. Passes are idempotent and safe to run concurrently.
//
// Three modes:
//
//   - AWS Lambda (AWS_LAMBDA_RUNTIME_API is set): a handler for EventBridge
//     Scheduler (rate(1 minute)); the event's content is ignored. IAM
//     decides who may invoke it: no key is needed.
//   - HTTP (Cloud Run, called by Cloud Scheduler): POST /reap (or
//     POST /v1/api/reaper/run, the API's path) runs one pass and answers
//     its statistics. The caller must present, as "Authorization: Bearer",
//     either an OIDC ID token (Cloud Scheduler's oidcToken: signature by
//     the issuer's keys, audience CAIRN_OIDC_AUDIENCE, a verified email in
//     CAIRN_OIDC_EMAILS) or an API key with the admin scope (checked by
//     package api, exactly as on the API's own reaper endpoint). Deploy the
//     Cloud Run service private as well (roles/run.invoker for the
//     scheduler's service account only): the check here is the second
//     lock, not the only one.
//   - A loop (-every 1s): for laptops and the local multi-process setup;
//     no HTTP, no authentication.
//
// Configuration is environment variables only: see internal/config. The
// lifecycles are internal/serve's (serve.Reaper, serve.HTTP), which
// `cairn reaper` runs too.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
	"github.com/cairn-dev/cairn/internal/serve"
)

func main() {
	app.Main(func(ctx context.Context) error {
		return run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	}, errUsage)
}

var errUsage = errors.New("usage")

// run is the reaper function with flags args and the configuration in
// environ. It reports what it returns: flags and a bad configuration on
// stderr, the rest in the log.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reaper", flag.ContinueOnError)
	fs.SetOutput(stderr)
	every := fs.Duration("every", 0, "run a pass this often, in this process, until SIGTERM (no HTTP server); for local use")
	once := fs.Bool("once", false, "run one pass, print its statistics and exit")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	role := config.ReaperHTTP
	if onLambda(environ) || *every > 0 || *once {
		role = config.Reaper
	}
	return app.Run(role, environ, stderr, "cairn reaper", func(cfg *config.Config, log *slog.Logger) error {
		return reap(ctx, cfg, log, *every, *once, stdout)
	})
}

func onLambda(environ []string) bool {
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); k == config.EnvLambdaRuntimeAPI {
			return true
		}
	}
	return false
}

// reap runs the mode the platform and the flags ask for.
func reap(ctx context.Context, cfg *config.Config, log *slog.Logger, every time.Duration, once bool, stdout io.Writer) error {
	rt, err := app.Open(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer rt.Close()
	r := serve.NewReaper(rt.Engine, serve.ReaperConfig{Period: every, Logger: log})
	switch {
	case cfg.OnLambda:
		app.StartLambda(lambdaHandler(r))
		return nil // not reached
	case once:
		st, err := r.RunOnce(ctx)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(st)
	case every > 0:
		r.Run(ctx)
		return nil
	}
	h, err := newHTTPHandler(ctx, cfg, rt.Engine, r, log)
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	return serve.HTTP(ctx, h, serve.Options{Addr: cfg.Addr(), Name: "cairn reaper", Path: reapPaths[0], Logger: log})
}

// lambdaHandler runs one pass per invocation, whatever the event (an
// EventBridge Scheduler payload, a test invoke).
func lambdaHandler(r *serve.Reaper) func(context.Context, json.RawMessage) (serve.Pass, error) {
	return func(ctx context.Context, _ json.RawMessage) (serve.Pass, error) {
		return r.RunOnce(ctx)
	}
}
