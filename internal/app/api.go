package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/config/drivers"
	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/telemetry/otelsetup"
)

// APIOptions are what a command line adds to the API function.
type APIOptions struct {
	// ReapEvery, when positive, also runs a reaper pass this often in
	// this process (cairn dev; cairn serve --reap-every).
	ReapEvery time.Duration
	// Ready, if set, is called with the address once the server accepts
	// connections.
	Ready func(net.Addr)
}

// APIConfig is the API configuration cfg describes: its keys, or dev mode.
func APIConfig(cfg *config.Config, log *slog.Logger) api.Config {
	return api.Config{Keys: cfg.Keys, DevMode: cfg.Dev, Logger: log, TestClock: cfg.TestClock}
}

// API is the API function, the code path of functions/api, `cairn serve`
// and `cairn dev`: it opens the runtime cfg names and serves the Huma API
// over its engine. On AWS Lambda it serves invocations and never returns;
// elsewhere it serves HTTP on cfg.Addr() until ctx ends, then drains held
// claims and stops (serve.API).
func API(ctx context.Context, cfg *config.Config, log *slog.Logger, o APIOptions) error {
	rt, err := Open(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer rt.Close()
	if cfg.Dev {
		log.Warn("DEV MODE: no API keys; every request is accepted without authentication. Bind to 127.0.0.1 only.")
	}
	e := rt.Engine
	h := rt.bench.handler(api.New(e, APIConfig(cfg, log)).Handler())
	if m := rt.Telemetry.Metrics; m != nil {
		// /metrics beside the API, on its listener: for a Prometheus
		// scrape, unauthenticated (bind it where only the scraper reaches).
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m)
		mux.Handle("/", h)
		h = mux
	}
	if cfg.OnLambda {
		StartLambda(LambdaHandler(h))
		return nil // not reached
	}
	return serve.API(ctx, e, h, serve.Options{
		Addr: cfg.Addr(), Name: "cairn api", Path: api.BasePath, Logger: log, Ready: o.Ready,
		LogAttrs: []any{"drivers", drivers.Cloud, "max_request_time", cfg.MaxRequestTime, "claim_hold", e.ClaimHold(), "claim_pause", e.ClaimPause(), "notify", cfg.Notify != "",
			"traces", orNone(rt.Telemetry.Traces), "metrics", metricsPath(rt.Telemetry)},
	}, o.ReapEvery)
}

// LambdaHandler serves payload-format-2.0 events (Function URLs, HTTP
// APIs) with h. ProxyWithContext, unlike Proxy, builds the request on the
// invocation's context, so its deadline reaches the engine: a held claim
// answers 500 ms before the function would time out.
func LambdaHandler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return httpadapter.NewV2(h).ProxyWithContext
}

func orNone(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

func metricsPath(p *otelsetup.Provider) string {
	if p.Metrics == nil {
		return "off"
	}
	return "/metrics"
}
