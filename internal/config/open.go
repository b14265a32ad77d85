package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/notify"
)

// Runtime is what a function works with: the bucket, the notification bus
// (nil without CAIRN_NOTIFY) and the engine on them.
type Runtime struct {
	Bucket *blob.Bucket
	Bus    notify.Bus
	Engine *engine.Engine
}

// Open opens the bucket and the bus a configuration names and builds the
// engine on them. The drivers for their schemes must be linked in (import
// internal/config/drivers). The reaper roles get a publish-only bus: on a
// queue (SQS, Pub/Sub) each message reaches one subscriber, and a reaper
// that subscribed would swallow hints meant for the API instances' claims.
func Open(ctx context.Context, c *Config, log *slog.Logger) (*Runtime, error) {
	b, err := blob.OpenBucket(ctx, c.Blob)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvBlob, err)
	}
	rt := &Runtime{Bucket: b}
	if c.Notify != "" {
		bus, err := notify.Open(ctx, c.Notify)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("%s: %w", EnvNotify, err)
		}
		rt.Bus = bus
	}
	bus := rt.Bus
	if bus != nil && !Subscribes(c.Role) {
		bus = PublishOnly(bus)
	}
	e, err := engine.New(b, c.EngineConfig(bus, log))
	if err != nil {
		rt.Close()
		return nil, err
	}
	rt.Engine = e
	return rt, nil
}

// Subscribes reports whether a process of this role receives hints from
// the bus. Only the API claims work; the reaper only announces it.
// Deployment templates grant queue permissions accordingly (receive and
// delete for the API, send only for the reaper).
func Subscribes(r Role) bool { return r == API }

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
	return errors.Join(errs...)
}

// PublishOnly wraps a bus so that it publishes but never receives: for
// processes that announce work but never claim it (the reaper).
func PublishOnly(b notify.Bus) notify.Bus { return publishOnly{b} }

type publishOnly struct{ notify.Bus }

func (publishOnly) Subscribe(func(notify.Hint)) (func(), error) { return func() {}, nil }

// Start is how a function starts: load the configuration for role from
// the environment, log its warnings, open the runtime. On failure it
// prints why and returns the process exit code (2: bad configuration, 1:
// the store or bus could not be opened); the caller exits with it.
func Start(ctx context.Context, role Role, stderr io.Writer) (*Config, *slog.Logger, *Runtime, int) {
	cfg, err := Load(role)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, nil, 2
	}
	log := cfg.Logger(stderr)
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	rt, err := Open(ctx, cfg, log)
	if err != nil {
		log.Error("cairn "+string(role)+": cannot start", "err", err)
		return nil, nil, nil, 1
	}
	return cfg, log, rt, 0
}
