package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
	_ "github.com/cairn-dev/cairn/telemetry/otelsetup/exporters" // OTLP over gRPC and HTTP, Prometheus
)

// serverFlags are the flags the server commands share. Each overrides the
// environment variable the functions read (internal/config), so a command
// line and a deployment configure cairn the same way and are validated by
// the same code.
type serverFlags struct {
	blobURL, notifyURL, keys string
	dev                      bool
	leaseTTL, maxRequest     time.Duration
	logLevel, logFormat      string
	metrics                  bool
}

func (f *serverFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.blobURL, "blob", "", "bucket URL: file:///path, s3://bucket?endpoint=…, gs://…, azblob://… (overrides $"+config.EnvBlob+")")
	fl.StringVar(&f.notifyURL, "notify", "", "notification bus URL: nats://127.0.0.1:4222, awssqs://…, gcppubsub://…, mem://name (overrides $"+config.EnvNotify+")")
	fl.StringVar(&f.keys, "keys", "", "API keys as id:scopes:sha256hex (overrides $"+config.EnvKeys+")")
	fl.BoolVar(&f.dev, "dev", false, "accept requests without keys, for a laptop (overrides $"+config.EnvDev+")")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", 0, "lease TTL (overrides $"+config.EnvLeaseTTL+")")
	fl.DurationVar(&f.maxRequest, "max-request-time", 0, "the platform's request limit; claims hold 4/5 of it (overrides $"+config.EnvMaxRequestTime+")")
	fl.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (overrides $"+config.EnvLogLevel+"; default info)")
	fl.StringVar(&f.logFormat, "log-format", "", "text or json (overrides $"+config.EnvLogFormat+"; default text, json on the clouds)")
}

// registerMetrics adds --metrics, for the commands that serve the API.
func (f *serverFlags) registerMetrics(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.metrics, "metrics", false, "serve Prometheus metrics at /metrics on the API's address (overrides $"+config.EnvMetrics+")")
}

// environ is env with the flags that were given appended, as the
// variables they override: internal/config takes the last entry of a
// variable set twice.
func (f *serverFlags) environ(cmd *cobra.Command, env []string, addr string) ([]string, error) {
	env = append([]string(nil), env...)
	set := func(name, value string) { env = append(env, name+"="+value) }
	// A flag's value, "" when it was not given.
	changed := func(flag string, v bool) string {
		if !cmd.Flags().Changed(flag) {
			return ""
		}
		return fmt.Sprint(v)
	}
	duration := func(d time.Duration) string {
		if d <= 0 {
			return ""
		}
		return d.String()
	}
	for _, v := range []struct{ name, value string }{
		{config.EnvBlob, f.blobURL},
		{config.EnvNotify, f.notifyURL},
		{config.EnvKeys, f.keys},
		{config.EnvDev, changed("dev", f.dev)},
		{config.EnvLeaseTTL, duration(f.leaseTTL)},
		{config.EnvMaxRequestTime, duration(f.maxRequest)},
		{config.EnvLogLevel, f.logLevel},
		{config.EnvLogFormat, f.logFormat},
		{config.EnvMetrics, changed("metrics", f.metrics)},
	} {
		if v.value != "" {
			set(v.name, v.value)
		}
	}
	if addr != "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("--addr %q: want host:port", addr)
		}
		set(config.EnvHost, host)
		set(config.EnvPort, port)
	}
	return env, nil
}

func newServeCmd() *cobra.Command {
	var f serverFlags
	var addr string
	var reapEvery time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API as a plain HTTP server (one of several instances on one bucket)",
		Long: `serve runs the API function — the code functions/api runs on Cloud Run — as a
long-lived HTTP server, configured like the functions (CAIRN_BLOB,
CAIRN_NOTIFY, CAIRN_KEYS, …; see docs/DEPLOY.md) with flags on top. Run as
many as you like against one bucket; give them a notification bus (--notify)
so a run started on one wakes claims held on another. The reaper runs
separately (cairn reaper) unless --reap-every is set.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := f.environ(cmd, os.Environ(), addr)
			if err != nil {
				return err
			}
			cfg, log, err := app.Load(config.API, env, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return app.API(cmd.Context(), cfg, log, app.APIOptions{ReapEvery: reapEvery})
		},
	}
	f.register(cmd)
	f.registerMetrics(cmd)
	cmd.Flags().StringVar(&addr, "addr", "", "address to listen on, host:port (overrides $CAIRN_HOST and $PORT; default 127.0.0.1:8080)")
	cmd.Flags().DurationVar(&reapEvery, "reap-every", -1, "also run the reaper this often (default: not in this process)")
	return cmd
}
