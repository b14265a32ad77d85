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
// Configuration is environment variables only: see internal/config.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
	"github.com/cairn-dev/cairn/internal/serve"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	ctx, stopSignals := serve.WithStopSignals(ctx)
	defer stopSignals()
	fs := flag.NewFlagSet("reaper", flag.ContinueOnError)
	fs.SetOutput(stderr)
	every := fs.Duration("every", 0, "run a pass this often, in this process, until SIGTERM (no HTTP server); for local use")
	once := fs.Bool("once", false, "run one pass, print its statistics and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	role := config.ReaperHTTP
	if _, onLambda := os.LookupEnv(config.EnvLambdaRuntimeAPI); onLambda || *every > 0 || *once {
		role = config.Reaper
	}
	cfg, log, rt, code := config.Start(ctx, role, stderr)
	if code != 0 {
		return code
	}
	defer rt.Close()
	r := serve.NewReaper(rt.Engine, serve.ReaperConfig{Period: *every, Logger: log})
	switch {
	case cfg.OnLambda:
		stopSignals()
		lambda.Start(lambdaHandler(r))
		return 0 // not reached
	case *once:
		st, err := r.RunOnce(ctx)
		if err != nil {
			return 1
		}
		json.NewEncoder(os.Stdout).Encode(st)
		return 0
	case *every > 0:
		r.Run(ctx)
		return 0
	}
	h, err := newHTTPHandler(ctx, cfg, rt.Engine, r, log)
	if err != nil {
		log.Error("cairn reaper: cannot start", "err", err)
		return 1
	}
	if err := serve.HTTP(ctx, h, serve.Options{Addr: cfg.Addr(), Name: "cairn reaper", Path: reapPaths[0], Logger: log}); err != nil {
		log.Error("cairn reaper: server failed", "err", err)
		return 1
	}
	return 0
}

// lambdaHandler runs one pass per invocation, whatever the event (an
// EventBridge Scheduler payload, a test invoke).
func lambdaHandler(r *serve.Reaper) func(context.Context, json.RawMessage) (serve.Pass, error) {
	return func(ctx context.Context, _ json.RawMessage) (serve.Pass, error) {
		return r.RunOnce(ctx)
	}
}
