package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/api/engine"
	"github.com/cairn-dev/cairn/blob"
	_ "github.com/cairn-dev/cairn/blob/file"
	_ "github.com/cairn-dev/cairn/blob/mem"
	_ "github.com/cairn-dev/cairn/blob/s3"
	"github.com/cairn-dev/cairn/functions/local"
	"github.com/cairn-dev/cairn/notify"
	_ "github.com/cairn-dev/cairn/notify/mem"
	_ "github.com/cairn-dev/cairn/notify/nats"
)

// serverFlags are the flags every server command shares, with defaults
// from the same environment variables the functions read.
type serverFlags struct {
	blobURL, notifyURL, keys string
	dev                      bool
	leaseTTL, maxRequest     time.Duration
}

func (f *serverFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.blobURL, "blob", os.Getenv("CAIRN_BLOB"), "bucket URL: file:///path, s3://bucket?endpoint=…, gs://…, azblob://… ($CAIRN_BLOB)")
	cmd.Flags().StringVar(&f.notifyURL, "notify", os.Getenv("CAIRN_NOTIFY"), "notification bus URL: nats://127.0.0.1:4222, mem://name, … ($CAIRN_NOTIFY; none = this process only)")
	cmd.Flags().StringVar(&f.keys, "keys", os.Getenv("CAIRN_KEYS"), "API keys as id:scopes:sha256hex ($CAIRN_KEYS)")
	cmd.Flags().BoolVar(&f.dev, "dev", os.Getenv("CAIRN_DEV") == "true", "accept requests without keys (laptops only) ($CAIRN_DEV)")
	cmd.Flags().DurationVar(&f.leaseTTL, "lease-ttl", envDuration("CAIRN_LEASE_TTL", 30*time.Second), "lease TTL ($CAIRN_LEASE_TTL)")
	cmd.Flags().DurationVar(&f.maxRequest, "max-request-time", envDuration("CAIRN_MAX_REQUEST_TIME", 30*time.Second), "the platform's request limit; claims hold 4/5 of it ($CAIRN_MAX_REQUEST_TIME)")
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

// open opens the bucket and the bus, and builds the configs.
func (f *serverFlags) open(cmd *cobra.Command, log *slog.Logger) (*blob.Bucket, engine.Config, api.Config, func(), error) {
	ctx := cmd.Context()
	if f.blobURL == "" {
		return nil, engine.Config{}, api.Config{}, nil, fmt.Errorf("--blob (or $CAIRN_BLOB) is required")
	}
	b, err := blob.OpenBucket(ctx, f.blobURL)
	if err != nil {
		return nil, engine.Config{}, api.Config{}, nil, err
	}
	ecfg := engine.Config{LeaseTTL: f.leaseTTL, MaxRequestTime: f.maxRequest, Logger: log}
	closers := []func(){func() { b.Close() }}
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if f.notifyURL != "" {
		bus, err := notify.Open(ctx, f.notifyURL)
		if err != nil {
			cleanup()
			return nil, engine.Config{}, api.Config{}, nil, err
		}
		ecfg.Bus = bus
		closers = append(closers, func() { notify.Close(bus) })
	}
	acfg := api.Config{DevMode: f.dev, Logger: log}
	if f.keys != "" {
		if acfg.Keys, err = api.ParseKeys(f.keys); err != nil {
			cleanup()
			return nil, engine.Config{}, api.Config{}, nil, err
		}
	} else if !f.dev {
		cleanup()
		return nil, engine.Config{}, api.Config{}, nil, fmt.Errorf("no API keys: set --keys (or $CAIRN_KEYS), or --dev for a laptop")
	}
	if f.dev && acfg.Keys == nil {
		log.Warn("DEV MODE: no API keys configured; every request is accepted without authentication. Bind to 127.0.0.1 only.")
	}
	return b, ecfg, acfg, cleanup, nil
}

func newLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func newServeCmd() *cobra.Command {
	var f serverFlags
	var addr string
	var reapEvery time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API as a plain HTTP server (one of several instances on one bucket)",
		Long: `serve runs the API function as a long-lived HTTP server. Run as many as you
like against one bucket; give them a notification bus (--notify) so a run
started on one wakes claims held on another. The reaper runs separately
(cairn reaper) unless --reap-every is set.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			log := newLogger()
			b, ecfg, acfg, cleanup, err := f.open(cmd, log)
			if err != nil {
				return err
			}
			defer cleanup()
			return local.Serve(cmd.Context(), local.Options{
				Addr: addr, Store: b, Engine: ecfg, API: acfg, ReapEvery: reapEvery, Logger: log,
				Ready: func(at string) {
					log.Info("serving", "api", "http://"+at+api.BasePath, "blob", f.blobURL, "notify", f.notifyURL)
				},
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", envOr("CAIRN_ADDR", "127.0.0.1:8080"), "address to listen on ($CAIRN_ADDR)")
	cmd.Flags().DurationVar(&reapEvery, "reap-every", -1, "also run the reaper this often (default: not in this process)")
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newReaperCmd() *cobra.Command {
	var f serverFlags
	var every time.Duration
	var once bool
	cmd := &cobra.Command{
		Use:     "reaper",
		Aliases: []string{"reap"},
		Short:   "Run the reaper: recover lost leases, fire timers, re-announce unclaimed work",
		Long: `reaper runs reaper passes every --every (1s by default, as locally; the cloud
schedules the reaper function every minute). With --once it runs one pass,
prints what it did and exits: an operator's tool. Passes are idempotent and
safe to run concurrently with each other and with API instances.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			log := newLogger()
			f.dev = true // the reaper serves no requests
			b, ecfg, _, cleanup, err := f.open(cmd, log)
			if err != nil {
				return err
			}
			defer cleanup()
			e, err := engine.New(b, ecfg)
			if err != nil {
				return err
			}
			defer e.Close()
			ctx := cmd.Context()
			for {
				start := time.Now()
				st, err := e.Reap(ctx)
				if ctx.Err() != nil {
					return nil
				}
				if err != nil {
					log.Warn("reaper pass failed", "err", err)
				} else if once || st.RunsVisited > 0 {
					log.Info("reaper pass", "took", time.Since(start).Round(time.Millisecond), "due", st.TimersDue, "runs", st.RunsVisited,
						"lost", st.LeasesLost, "timed_out", st.TimedOut, "fired", st.TimersFired, "announced", st.Announced, "errors", st.Errors)
				}
				if once {
					if err == nil && st.Errors > 0 {
						return fmt.Errorf("%d run visits failed", st.Errors)
					}
					return err
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(every):
				}
			}
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&every, "every", time.Second, "period between passes")
	cmd.Flags().BoolVar(&once, "once", false, "run one pass and exit")
	return cmd
}
