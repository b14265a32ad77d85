//go:build lambda.norpc

package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/serve"
)

// newHTTPHandler refuses: the Lambda bootstrap (make lambda builds with
// lambda.norpc) is invoked by EventBridge Scheduler, or run with -every
// or -once, and never serves HTTP. Leaving the HTTP mode out leaves out
// package api and its dashboard, whose templates keep the linker from
// dropping unused methods: the bootstrap is half the size
// (docs/DECISIONS.md).
func newHTTPHandler(context.Context, *config.Config, *engine.Engine, *serve.Reaper, *slog.Logger) (http.Handler, error) {
	return nil, errors.New("this reaper is built for AWS Lambda (-tags lambda.norpc) and serves no HTTP: run it on Lambda, or with -every or -once")
}
