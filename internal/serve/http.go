// Package serve owns the two lifecycles every cairn server process shares:
// serving an HTTP handler until its context ends (HTTP), and running a
// reaper pass every period (Reaper). The API function, the reaper
// function, `cairn serve`, `cairn dev`, `cairn reaper` and internal/local
// all go through it, so they time out, drain and shut down alike.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/engine"
)

// Defaults of Options.
const (
	DefaultAddr              = "127.0.0.1:8080"
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	// DefaultGrace bounds the wait for requests in flight once the
	// context ends: Cloud Run kills a container 10 s after SIGTERM.
	DefaultGrace = 8 * time.Second
)

// StopSignals are the signals that stop a server process: SIGTERM (what
// Cloud Run, Kubernetes and process managers send) and SIGINT (Ctrl-C).
var StopSignals = []os.Signal{syscall.SIGTERM, os.Interrupt}

// WithStopSignals returns a context that ends on the first StopSignals.
// Process entry points call it first thing, so that a platform stopping
// an instance right after start still gets a graceful stop.
func WithStopSignals(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, StopSignals...)
}

// ResetStopSignals gives the stop signals their default handling back
// (the process dies of them): for a process that has nothing to drain.
func ResetStopSignals() { signal.Reset(StopSignals...) }

// Options configure HTTP. Zero fields take the defaults in brackets.
type Options struct {
	// Addr to listen on, host:port [127.0.0.1:8080].
	Addr string
	// Name prefixes the log lines ("cairn api: serving") ["cairn"].
	Name string
	// ReadHeaderTimeout bounds reading a request's headers [10s].
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included [none].
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the
	// end of its response, so it must exceed the longest request the
	// handler serves on purpose (a held claim): past it the handler runs
	// on but its response is lost [none].
	WriteTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long [2m].
	IdleTimeout time.Duration
	// Grace bounds the wait for requests in flight once ctx ends; past it
	// the connections left are closed [8s].
	Grace time.Duration
	// Drain, if set, is called when ctx ends, before the server stops
	// accepting: the engine's Drain, so that held claims answer (empty)
	// at once instead of holding the shutdown up.
	Drain func()
	// Logger [slog.Default()].
	Logger *slog.Logger
	// Path is appended to the address in the "serving" line (the API's
	// base path), and LogAttrs are added to it.
	Path     string
	LogAttrs []any
	// Ready, if set, is called with the listening address once the
	// server accepts connections.
	Ready func(net.Addr)
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Name == "" {
		o.Name = "cairn"
	}
	def(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.Grace, DefaultGrace)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// HTTP serves h on o.Addr until ctx ends, then stops gracefully: Drain
// (held claims answer now), stop accepting, wait for the requests in
// flight at most o.Grace, close what is left. It returns nil after a
// graceful stop, an error when the server could not listen or failed, or
// when the grace ran out (the connections left were cut).
func HTTP(ctx context.Context, h http.Handler, o Options) error {
	o.setDefaults()
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	return serveOn(ctx, ln, h, o)
}

func serveOn(ctx context.Context, ln net.Listener, h http.Handler, o Options) error {
	log := o.Logger
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info(o.Name+": serving", append([]any{"addr", "http://" + ln.Addr().String() + o.Path}, o.LogAttrs...)...)
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	start := time.Now()
	log.Info(o.Name + ": stopping")
	// Order matters: held claims answer (empty) first, so that Shutdown,
	// which waits for requests in flight, is not held up by long polls,
	// and no claim is cut off after it created a lease its worker never
	// hears of.
	if o.Drain != nil {
		o.Drain()
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		srv.Close()
		return fmt.Errorf("%s: requests still in flight after a grace of %v were cut: %w", o.Name, o.Grace, err)
	}
	log.Info(o.Name+": stopped", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// RequestMargin is how far past the engine's maximum request time API
// sets its read and write timeouts: the platform (Lambda, Cloud Run, an
// HTTP API) cuts a request at that time anyway, and the engine answers
// held claims well before it (at 4/5).
const RequestMargin = 10 * time.Second

// API serves h, e's API, until ctx ends, as HTTP does, with e's Drain and
// read and write timeouts RequestMargin past e's maximum request time
// (unless o sets them). With reapEvery positive, a Reaper of e runs beside
// the server from the moment it listens until it stops, logging on
// o.Logger, its routine passes at Debug: one process with everything, as
// `cairn dev` runs.
func API(ctx context.Context, e *engine.Engine, h http.Handler, o Options, reapEvery time.Duration) error {
	o = engineOptions(o, e)
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	if reapEvery > 0 {
		r := NewReaper(e, ReaperConfig{Period: reapEvery, Logger: o.Logger, LogLevel: slog.LevelDebug})
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Run(rctx)
		}()
		defer func() { stop(); <-done }()
	}
	return serveOn(ctx, ln, h, o)
}

// engineOptions is o with the defaults, e's Drain and timeouts past e's
// maximum request time.
func engineOptions(o Options, e *engine.Engine) Options {
	o.setDefaults()
	if o.Drain == nil {
		o.Drain = e.Drain
	}
	limit := e.Config().MaxRequestTime + RequestMargin
	if o.ReadTimeout == 0 {
		o.ReadTimeout = limit
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = limit
	}
	return o
}
