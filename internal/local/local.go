// Package local runs cairn as one process: the API, the reaper on a
// one-second schedule and in-process notifications, on a bucket the
// caller opened. It serves as `cairn dev` does (internal/serve.API),
// configured by options rather than the environment: what sdk/sdktest
// starts inside tests. It links no cloud driver.
package local

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/serve"
)

// Options configure a local server.
type Options struct {
	// Addr to listen on [127.0.0.1:8080].
	Addr string
	// Store is the bucket.
	Store *blob.Bucket
	// Engine configuration; zero values take engine defaults. Ignored
	// when Instance is set.
	Engine engine.Config
	// Instance, if set, is the engine to serve (built by the caller, who
	// closes it); Store and Engine are then unused.
	Instance *engine.Engine
	// API configuration (keys or dev mode).
	API api.Config
	// ReapEvery is the reaper's period [1s]; negative disables the reaper.
	ReapEvery time.Duration
	// Logger [slog.Default()].
	Logger *slog.Logger
	// Ready, if set, is called with the listening address.
	Ready func(addr string)
}

// Serve runs the server until ctx is cancelled, then drains held claims
// and shuts down gracefully.
func Serve(ctx context.Context, o Options) error {
	if o.ReapEvery == 0 {
		o.ReapEvery = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Engine.Logger == nil {
		o.Engine.Logger = o.Logger
	}
	if o.API.Logger == nil {
		o.API.Logger = o.Logger
	}
	e := o.Instance
	if e == nil {
		var err error
		if e, err = engine.New(o.Store, o.Engine); err != nil {
			return err
		}
		defer e.Close()
	}
	return serve.API(ctx, e, api.New(e, o.API).Handler(), serve.Options{
		Addr: o.Addr, Name: "cairn api", Path: api.BasePath, Logger: o.Logger,
		Ready: func(a net.Addr) {
			if o.Ready != nil {
				o.Ready(a.String())
			}
		},
	}, o.ReapEvery)
}
