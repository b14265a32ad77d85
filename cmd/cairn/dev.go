package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/testclock"
	"github.com/cairn-dev/cairn/sdk"
)

func newDevCmd() *cobra.Command {
	var (
		f         serverFlags
		addr, dir string
		reapEvery time.Duration
		testClock bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the embedded default: API, reaper and notifications in one process on a local directory",
		Long: `dev runs cairn as one process with no containers and no cloud: the API, the
reaper every second and in-process notifications, storing everything in a
local directory (.cairn/data by default). It is cairn serve with a laptop's
defaults: the CAIRN_* variables (docs/DEPLOY.md) apply, flags on top; without
keys (--keys or CAIRN_KEYS) it accepts requests without an API key: for a
laptop only.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := devEnviron(os.Environ(), dir)
			if err != nil {
				return err
			}
			if env, err = f.environ(cmd, env, addr); err != nil {
				return err
			}
			env = devMode(env)
			cfg, log, err := app.Load(config.API, env, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg.ReplaceDefinitions = true // edit, restart the worker, go on: runs in flight keep theirs
			if testClock {
				cfg.TestClock = &testclock.Clock{}
			}
			out := cmd.OutOrStdout()
			return app.API(cmd.Context(), cfg, log, app.APIOptions{
				ReapEvery: reapEvery,
				Ready: func(a net.Addr) {
					at := a.String()
					fmt.Fprintf(out, "cairn dev: API on http://%s%s (docs: http://%s/docs), store %s\n", at, api.BasePath, at, cfg.Blob)
					fmt.Fprintf(out, "dashboard: http://%s/ui/\n", at)
					fmt.Fprint(out, nextHint(a))
				},
			})
		},
	}
	f.register(cmd)
	f.registerMetrics(cmd)
	cmd.Flags().StringVar(&addr, "addr", "", "address to listen on, host:port (overrides $CAIRN_HOST and $PORT; default 127.0.0.1:8080)")
	cmd.Flags().StringVar(&dir, "dir", ".cairn/data", "directory of the local store, when neither --blob nor $"+config.EnvBlob+" names one")
	cmd.Flags().DurationVar(&reapEvery, "reap-every", time.Second, "reaper period")
	cmd.Flags().BoolVar(&testClock, "test-clock", false, "measure time on a clock tests move forward with POST /v1/api/dev/clock (a sleep of an hour passes in a moment; for tests only)")
	return cmd
}

// nextHint is the banner's last lines: how to start the example worker
// and a run against the server listening on a. Both find the server in
// $CAIRN_SERVER (sdk.ClientFromEnv, the --server flag's default), so an
// address other than the default one is exported first; a wildcard host
// (0.0.0.0, ::) is reached on the loopback address.
func nextHint(a net.Addr) string {
	server := "http://" + a.String()
	if tcp, ok := a.(*net.TCPAddr); ok {
		ip := tcp.IP
		if ip == nil || ip.IsUnspecified() {
			ip = net.IPv4(127, 0, 0, 1)
		}
		server = "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
	}
	var b strings.Builder
	b.WriteString("next: ")
	indent := "      "
	if server != sdk.DefaultServer {
		fmt.Fprintf(&b, "export CAIRN_SERVER=%s   (in each terminal below)\n%s", server, indent)
	}
	fmt.Fprintf(&b, "go run ./examples/triage   (a worker), then:\n%sgo run ./cmd/cairn runs start triage --wait --input '{\"subject\":\"Charged twice\",\"body\":\"URGENT: I was charged twice\",\"customer\":\"ana@bigcorp.com\"}'\n", indent)
	return b.String()
}

// devEnviron puts dev's default store, a directory, under env: a
// CAIRN_BLOB in env (or --blob, appended later) wins.
func devEnviron(env []string, dir string) ([]string, error) {
	if _, ok := lookup(env, config.EnvBlob); ok {
		return env, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return append([]string{config.EnvBlob + "=file://" + abs}, env...), nil
}

// devMode turns dev mode on when no key is configured and CAIRN_DEV does
// not say otherwise.
func devMode(env []string) []string {
	keys, _ := lookup(env, config.EnvKeys)
	if _, set := lookup(env, config.EnvDev); !set && strings.TrimSpace(keys) == "" {
		return append(env, config.EnvDev+"=true")
	}
	return env
}

// lookup finds the value of name in env, the last entry winning.
func lookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
