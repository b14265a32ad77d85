//go:build !lambda.norpc

package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/serve"
)

// newHTTPHandler serves the reaper endpoint: OIDC tokens are checked here,
// API keys by package api.
func newHTTPHandler(ctx context.Context, cfg *config.Config, e *engine.Engine, r *serve.Reaper, log *slog.Logger) (http.Handler, error) {
	var v verifier
	if cfg.OIDC.Enabled() {
		var err error
		if v, err = newVerifier(ctx, cfg.OIDC, nil); err != nil {
			return nil, err
		}
	}
	return newHandler(r, api.New(e, app.APIConfig(cfg, log)).Handler(), v, cfg.Dev, log), nil
}
