package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
	"github.com/cairn-dev/cairn/internal/serve"
)

// serverFlags are the flags the server commands share. Each overrides the
// environment variable the functions read (internal/config), so a command
// line and a deployment configure cairn the same way and are validated by
// the same code.
type serverFlags struct {
	blobURL, notifyURL, keys string
	dev                      bool
	leaseTTL, maxRequest     time.Duration
}

func (f *serverFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.blobURL, "blob", "", "bucket URL: file:///path, s3://bucket?endpoint=…, gs://…, azblob://… (overrides $"+config.EnvBlob+")")
	fl.StringVar(&f.notifyURL, "notify", "", "notification bus URL: nats://127.0.0.1:4222, awssqs://…, gcppubsub://…, mem://name (overrides $"+config.EnvNotify+")")
	fl.StringVar(&f.keys, "keys", "", "API keys as id:scopes:sha256hex (overrides $"+config.EnvKeys+")")
	fl.BoolVar(&f.dev, "dev", false, "accept requests without keys, for a laptop (overrides $"+config.EnvDev+")")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", 0, "lease TTL (overrides $"+config.EnvLeaseTTL+")")
	fl.DurationVar(&f.maxRequest, "max-request-time", 0, "the platform's request limit; claims hold 4/5 of it (overrides $"+config.EnvMaxRequestTime+")")
}

// load reads the configuration from the environment with the flags on top.
func (f *serverFlags) load(cmd *cobra.Command, role config.Role, addr string) (*config.Config, error) {
	env := os.Environ()
	set := func(name, value string) { env = append(env, name+"="+value) }
	if f.blobURL != "" {
		set(config.EnvBlob, f.blobURL)
	}
	if f.notifyURL != "" {
		set(config.EnvNotify, f.notifyURL)
	}
	if f.keys != "" {
		set(config.EnvKeys, f.keys)
	}
	if cmd.Flags().Changed("dev") {
		set(config.EnvDev, fmt.Sprint(f.dev))
	}
	if f.leaseTTL > 0 {
		set(config.EnvLeaseTTL, f.leaseTTL.String())
	}
	if f.maxRequest > 0 {
		set(config.EnvMaxRequestTime, f.maxRequest.String())
	}
	if addr != "" {
		host, port, ok := strings.Cut(addr, ":")
		if !ok {
			return nil, fmt.Errorf("--addr %q: want host:port", addr)
		}
		set(config.EnvHost, host)
		set(config.EnvPort, port)
	}
	return config.FromEnv(role, env)
}

func newServeCmd() *cobra.Command {
	var f serverFlags
	var addr string
	var reapEvery time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API as a plain HTTP server (one of several instances on one bucket)",
		Long: `serve runs the API function as a long-lived HTTP server, configured like the
functions (CAIRN_BLOB, CAIRN_NOTIFY, CAIRN_KEYS, …; see docs/DEPLOY.md) with
flags on top. Run as many as you like against one bucket; give them a
notification bus (--notify) so a run started on one wakes claims held on
another. The reaper runs separately (cairn reaper) unless --reap-every is set.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.load(cmd, config.API, addr)
			if err != nil {
				return err
			}
			log := cfg.Logger(os.Stderr)
			rt, err := config.Open(cmd.Context(), cfg, log)
			if err != nil {
				return err
			}
			defer rt.Close()
			if cfg.Dev {
				log.Warn("DEV MODE: no API keys; every request is accepted without authentication. Bind to 127.0.0.1 only.")
			}
			var reaper *serve.ReaperConfig
			if reapEvery > 0 {
				reaper = &serve.ReaperConfig{Period: reapEvery, Logger: log}
			}
			e := rt.Engine
			return serve.API(cmd.Context(), e, api.New(e, cfg.APIConfig(log)).Handler(), serve.Options{
				Addr: cfg.Addr(), Name: "cairn api", Path: api.BasePath, Logger: log,
				LogAttrs: []any{"max_request_time", cfg.MaxRequestTime, "claim_hold", e.MaxClaimHold(), "notify", cfg.Notify != ""},
			}, reaper)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "", "address to listen on, host:port (overrides $CAIRN_HOST and $PORT; default 127.0.0.1:8080)")
	cmd.Flags().DurationVar(&reapEvery, "reap-every", -1, "also run the reaper this often (default: not in this process)")
	return cmd
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
			cfg, err := f.load(cmd, config.Reaper, "")
			if err != nil {
				return err
			}
			log := cfg.Logger(os.Stderr)
			rt, err := config.Open(cmd.Context(), cfg, log)
			if err != nil {
				return err
			}
			defer rt.Close()
			r := serve.NewReaper(rt.Engine, serve.ReaperConfig{Period: every, Logger: log, LogIdle: once})
			if !once {
				r.Run(cmd.Context())
				return nil
			}
			st, err := r.RunOnce(cmd.Context())
			if err == nil && st.Errors > 0 {
				return fmt.Errorf("%d run visits failed", st.Errors)
			}
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&every, "every", time.Second, "period between passes")
	cmd.Flags().BoolVar(&once, "once", false, "run one pass and exit")
	return cmd
}
