package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
)

func newDevCmd() *cobra.Command {
	var (
		f         serverFlags
		addr, dir string
		reapEvery time.Duration
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
			out := cmd.OutOrStdout()
			return app.API(cmd.Context(), cfg, log, app.APIOptions{
				ReapEvery: reapEvery,
				Ready: func(a net.Addr) {
					at := a.String()
					fmt.Fprintf(out, "cairn dev: API on http://%s%s (docs: http://%s/docs), store %s\n", at, api.BasePath, at, cfg.Blob)
					fmt.Fprintf(out, "dashboard: http://%s/ui/\n", at)
					fmt.Fprintf(out, "next: go run ./examples/triage   (a worker), then:\n      go run ./cmd/cairn runs start triage --wait --input '{\"subject\":\"Charged twice\",\"body\":\"URGENT: I was charged twice\",\"customer\":\"ana@bigcorp.com\"}'\n")
				},
			})
		},
	}
	f.register(cmd)
	f.registerMetrics(cmd)
	cmd.Flags().StringVar(&addr, "addr", "", "address to listen on, host:port (overrides $CAIRN_HOST and $PORT; default 127.0.0.1:8080)")
	cmd.Flags().StringVar(&dir, "dir", ".cairn/data", "directory of the local store, when neither --blob nor $"+config.EnvBlob+" names one")
	cmd.Flags().DurationVar(&reapEvery, "reap-every", time.Second, "reaper period")
	return cmd
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
