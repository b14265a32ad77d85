// Command api is cairn's API function: the Huma API of package api over an
// engine on the bucket named by CAIRN_BLOB. It holds no state between
// requests; run as many instances as the platform likes.
//
// One binary, three homes:
//
//   - AWS Lambda (AWS_LAMBDA_RUNTIME_API is set): it serves Function URL and
//     API Gateway HTTP API events (payload format 2.0) through
//     aws-lambda-go-api-proxy's httpadapter. The invocation's deadline
//     becomes the request context's deadline, and the engine answers a
//     held claim 500 ms before it, so a long poll never times the function
//     out. Build it with -tags lambda.norpc into an executable named
//     bootstrap (make lambda).
//   - Cloud Run, or any host: a plain HTTP server on CAIRN_HOST:PORT. On
//     SIGTERM (Cloud Run gives 10 s) it drains: held claims answer at once
//     (empty), then the server stops accepting and waits for requests in
//     flight, at most 8 s.
//   - A laptop: the same, CAIRN_HOST defaults to 127.0.0.1.
//
// Configuration is environment variables only: see internal/config.
package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/config/drivers"
	shell "github.com/cairn-dev/cairn/internal/serve"
)

func main() {
	os.Exit(run(context.Background(), os.Stderr))
}

func run(ctx context.Context, stderr io.Writer) int {
	// Catch SIGTERM from the first instant: a platform may stop an
	// instance as soon as it answered its first request.
	ctx, stopSignals := shell.WithStopSignals(ctx)
	defer stopSignals()
	cfg, log, rt, code := config.Start(ctx, config.API, stderr)
	if code != 0 {
		return code
	}
	defer rt.Close()
	if cfg.Dev {
		log.Warn("DEV MODE: no API keys; every request is accepted without authentication. Bind to 127.0.0.1 only.")
	}
	h := api.New(rt.Engine, cfg.APIConfig(log)).Handler()
	if cfg.OnLambda {
		// Lambda freezes the environment between invocations, so no claim
		// is ever held when it is shut down: nothing to drain, and the
		// default signal handling applies.
		stopSignals()
		lambda.Start(lambdaHandler(h))
		return 0 // not reached: lambda.Start exits the process
	}
	if err := serve(ctx, cfg, rt.Engine, h, log, nil); err != nil {
		log.Error("cairn api: server failed", "err", err)
		return 1
	}
	return 0
}

// lambdaHandler serves payload-format-2.0 events (Function URLs, HTTP
// APIs) with h. ProxyWithContext, unlike Proxy, builds the request on the
// invocation's context, so its deadline reaches the engine.
func lambdaHandler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return httpadapter.NewV2(h).ProxyWithContext
}

// serve runs the HTTP server on cfg.Addr() until ctx ends (run cancels it
// on SIGTERM or SIGINT), then drains held claims and shuts down
// gracefully. ready, if set, is called with the address once the server
// accepts connections.
func serve(ctx context.Context, cfg *config.Config, e *engine.Engine, h http.Handler, log *slog.Logger, ready func(net.Addr)) error {
	return shell.API(ctx, e, h, shell.Options{
		Addr: cfg.Addr(), Name: "cairn api", Path: api.BasePath, Logger: log, Ready: ready,
		LogAttrs: []any{"drivers", drivers.Cloud, "max_request_time", cfg.MaxRequestTime, "claim_hold", e.MaxClaimHold(), "notify", cfg.Notify != ""},
	}, nil)
}
