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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/config/drivers"
)

// shutdownGrace bounds the wait for requests in flight after SIGTERM:
// Cloud Run kills the container 10 s after SIGTERM.
const shutdownGrace = 8 * time.Second

func main() {
	os.Exit(run(context.Background(), os.Stderr))
}

func run(ctx context.Context, stderr io.Writer) int {
	// Catch SIGTERM from the first instant: a platform may stop an
	// instance as soon as it answered its first request.
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
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

// serve runs an HTTP server on cfg.Addr() until ctx ends (run cancels it
// on SIGTERM or SIGINT), then drains held claims and shuts down
// gracefully. ready, if set, is called with the address once the server
// accepts connections.
func serve(ctx context.Context, cfg *config.Config, e *engine.Engine, h http.Handler, log *slog.Logger, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("cairn api: serving", "addr", "http://"+ln.Addr().String()+api.BasePath, "drivers", drivers.Cloud,
		"max_request_time", cfg.MaxRequestTime, "claim_hold", e.MaxClaimHold(), "notify", cfg.Notify != "")
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	start := time.Now()
	log.Info("cairn api: stopping; held claims answer now")
	// Order matters: held claims answer (empty) first, so that Shutdown,
	// which waits for requests in flight, is not held up by long polls,
	// and no claim is cut off after it created a lease its worker never
	// hears of.
	e.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("cairn api: stopped", "took", time.Since(start).Round(time.Millisecond))
	return nil
}
