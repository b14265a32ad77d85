// Package app wires a parsed configuration (internal/config) into a
// running cairn: it opens the bucket and the bus, builds the engine and
// the logger, and runs the API function (API) — the one code path that
// functions/api, `cairn serve` and `cairn dev` share. The lifecycles
// themselves (serving until the context ends, reaping every period) are
// internal/serve's.
//
// Everything here returns errors, but for Main and Run, which the
// functions' process entry points are made of: they report errors and pick
// exit codes.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/telemetry"
	"github.com/cairn-dev/cairn/telemetry/otelsetup"
)

// Load reads the configuration for role from environ (as os.Environ
// returns it; a flag is an entry appended on top), builds the logger it
// asks for, writing to w, and logs the configuration's warnings on it.
// The error is the *config.Error naming every problem.
func Load(role config.Role, environ []string, w io.Writer) (*config.Config, *slog.Logger, error) {
	cfg, err := config.FromEnv(role, environ)
	if err != nil {
		return nil, nil, err
	}
	log := Logger(cfg, w)
	for _, warning := range cfg.Warnings {
		log.Warn(warning)
	}
	return cfg, log, nil
}

// Run loads the configuration for role from environ (Load) and runs body
// with it. It reports what fails where an operator looks: a bad
// configuration on w, body's error in the log as "name: failed".
func Run(role config.Role, environ []string, w io.Writer, name string, body func(*config.Config, *slog.Logger) error) error {
	cfg, log, err := Load(role, environ, w)
	if err != nil {
		fmt.Fprintln(w, err)
		return err
	}
	if err := body(cfg, log); err != nil {
		log.Error(name+": failed", "err", err)
		return err
	}
	return nil
}

// Main is a function process's main: it runs run with a context that ends
// on the stop signals, caught from the first instant (a platform may stop
// an instance as soon as it answered its first request), then exits with
// ExitCode of what run returned. run reports its errors itself.
func Main(run func(ctx context.Context) error, usage ...error) {
	ctx, stop := serve.WithStopSignals(context.Background())
	err := run(ctx)
	stop()
	os.Exit(ExitCode(err, usage...))
}

// ExitCode is a process's exit status for the error its run returned: 0
// for none, 2 for a bad configuration (a *config.Error) or an error that
// is one of usage, 1 for any other.
func ExitCode(err error, usage ...error) int {
	var bad *config.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &bad):
		return 2
	}
	for _, u := range usage {
		if errors.Is(err, u) {
			return 2
		}
	}
	return 1
}

// Logger returns the process logger cfg asks for, writing to w: JSON on
// the clouds (on Cloud Run with the field names Cloud Logging reads:
// severity, message, time), text on a terminal.
func Logger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	if cfg.OnCloudRun {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.LevelKey:
				a.Key = "severity"
				if l, ok := a.Value.Any().(slog.Level); ok && l == slog.LevelWarn {
					a.Value = slog.StringValue("WARNING")
				}
			case slog.MessageKey:
				a.Key = "message"
			}
			return a
		}
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// Runtime is what a function works with: the bucket, the notification bus
// (nil without CAIRN_NOTIFY) and the engine on them.
type Runtime struct {
	Bucket *blob.Bucket
	Bus    notify.Bus
	Engine *engine.Engine
	// Telemetry is what the OTEL_* variables and CAIRN_METRICS turned on.
	Telemetry *otelsetup.Provider

	bench *benchHooks
}

// Open opens the bucket and the bus a configuration names and builds the
// engine on them. The drivers for their schemes must be linked in (import
// internal/config/drivers). The reaper roles get a publish-only bus: on a
// queue (SQS, Pub/Sub) each message reaches one subscriber, and a reaper
// that subscribed would swallow hints meant for the API instances' claims.
func Open(ctx context.Context, c *config.Config, log *slog.Logger) (*Runtime, error) {
	tel, err := otelsetup.Setup(ctx, otelsetup.Options{Metrics: c.Metrics && c.Role == config.API})
	if err != nil {
		return nil, err
	}
	b, err := blob.OpenBucket(ctx, c.Blob)
	if err != nil {
		tel.Shutdown(ctx)
		return nil, fmt.Errorf("%s: %w", config.EnvBlob, err)
	}
	wrapped, hooks, err := benchWrap(b)
	if err != nil {
		b.Close()
		tel.Shutdown(ctx)
		return nil, err
	}
	b = wrapped
	// The engine works on the instrumented bucket; rt.Bucket stays the
	// bucket itself (closing either closes the driver).
	rt := &Runtime{Bucket: b, Telemetry: tel, bench: hooks}
	if c.Notify != "" {
		bus, err := notify.Open(ctx, c.Notify)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("%s: %w", config.EnvNotify, err)
		}
		rt.Bus = bus
	}
	bus := telemetry.WrapBus(rt.Bus, tel.T)
	if bus != nil && !config.Subscribes(c.Role) {
		bus = PublishOnly(bus)
	}
	ecfg := c.EngineConfig(bus, log)
	ecfg.Telemetry = tel.T
	e, err := engine.New(telemetry.WrapBucket(b, tel.T), ecfg)
	if err != nil {
		rt.Close()
		return nil, err
	}
	rt.Engine = e
	return rt, nil
}

// Close closes the engine, then the bus, then the bucket.
func (rt *Runtime) Close() error {
	var errs []error
	if rt.Engine != nil {
		errs = append(errs, rt.Engine.Close())
	}
	if rt.Bus != nil {
		errs = append(errs, notify.Close(rt.Bus))
	}
	if rt.Bucket != nil {
		errs = append(errs, rt.Bucket.Close())
	}
	if rt.Telemetry != nil {
		// Flush the spans still queued; an unreachable collector must not
		// hold the exit up for long.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errs = append(errs, rt.Telemetry.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// PublishOnly wraps a bus so that it publishes but never receives: for
// processes that announce work but never claim it (the reaper).
func PublishOnly(b notify.Bus) notify.Bus { return publishOnly{b} }

type publishOnly struct{ notify.Bus }

func (publishOnly) Subscribe(func(notify.Hint)) (func(), error) { return func() {}, nil }

// StartLambda serves Lambda invocations with handler (see lambda.Start)
// and never returns. Lambda freezes the environment between invocations,
// so nothing is ever in flight when it is shut down: the stop signals get
// their default handling back first.
func StartLambda(handler any) {
	serve.ResetStopSignals()
	lambda.Start(handler)
}
