// Package local runs cairn as one process: the API, the reaper on a
// one-second schedule and in-process notifications, on a local bucket.
// It is what `cairn dev` and `make run` start.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine"
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
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
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
	a := api.New(e, o.API)
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	reapDone := make(chan struct{})
	reapCtx, stopReaper := context.WithCancel(context.Background())
	go func() {
		defer close(reapDone)
		if o.ReapEvery < 0 {
			return
		}
		t := time.NewTicker(o.ReapEvery)
		defer t.Stop()
		for {
			select {
			case <-reapCtx.Done():
				return
			case <-t.C:
				if _, err := e.Reap(reapCtx); err != nil && reapCtx.Err() == nil {
					o.Logger.Warn("reaper pass failed", "err", err)
				}
			}
		}
	}()
	select {
	case err := <-errc:
		stopReaper()
		<-reapDone
		return err
	case <-ctx.Done():
	}
	// Held claims answer now (empty), then in-flight requests finish.
	e.Drain()
	stopReaper()
	<-reapDone
	// Requests in flight finish; connections a client opened but never
	// used do not hold the shutdown past a short grace.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		srv.Close()
	}
	return nil
}
