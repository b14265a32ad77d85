package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob"
	_ "github.com/cairn-dev/cairn/blob/file"
	_ "github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/functions/local"
)

func newDevCmd() *cobra.Command {
	var (
		addr, dir, store, keys string
		reapEvery              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the embedded default: API, reaper and notifications in one process on a local directory",
		Long: `dev runs cairn as one process with no containers and no cloud: the API, the
reaper every second and in-process notifications, storing everything in a
local directory (.cairn/data by default). Without --keys it accepts requests
without an API key: for a laptop only.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if store == "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return err
				}
				store = "file://" + abs
			}
			b, err := blob.OpenBucket(ctx, store)
			if err != nil {
				return err
			}
			defer b.Close()
			cfg := api.Config{DevMode: keys == ""}
			if keys != "" {
				if cfg.Keys, err = api.ParseKeys(keys); err != nil {
					return err
				}
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			if cfg.DevMode {
				log.Warn("DEV MODE: no API keys configured; every request is accepted without authentication. Bind to 127.0.0.1 only.")
			}
			return local.Serve(ctx, local.Options{
				Addr: addr, Store: b, API: cfg, ReapEvery: reapEvery, Logger: log,
				Ready: func(at string) {
					fmt.Fprintf(cmd.OutOrStdout(), "cairn dev: API on http://%s%s (docs: http://%s/docs), store %s\n", at, api.BasePath, at, store)
					fmt.Fprintf(cmd.OutOrStdout(), "next: go run ./examples/triage   (a worker), then:\n      go run ./cmd/cairn runs start triage --wait --input '{\"subject\":\"Charged twice\",\"body\":\"URGENT: I was charged twice\",\"customer\":\"ana@bigcorp.com\"}'\n")
				},
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().StringVar(&dir, "dir", ".cairn/data", "directory of the local store")
	cmd.Flags().StringVar(&store, "blob", "", "bucket URL instead of --dir (file:///path, mem://, s3://…)")
	cmd.Flags().StringVar(&keys, "keys", os.Getenv("CAIRN_KEYS"), "API keys as id:scopes:sha256hex (default $CAIRN_KEYS; none = dev mode)")
	cmd.Flags().DurationVar(&reapEvery, "reap-every", time.Second, "reaper period")
	return cmd
}
