package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/serve"
)

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
			env, err := f.environ(cmd, os.Environ(), "")
			if err != nil {
				return err
			}
			cfg, log, err := app.Load(config.Reaper, env, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			rt, err := app.Open(cmd.Context(), cfg, log)
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
