package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

func newSchedulesCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Create, list, pause, resume, backfill and delete cron schedules",
		Long: `schedules start runs of a workflow at each tick of a cron expression in a
time zone. The reaper fires due ticks, one run per tick. Talks to a cairn
server (--server, default $CAIRN_SERVER or http://127.0.0.1:8080) with the
key in --key or $CAIRN_KEY.

Schedule ids are lower case: usually a name you choose (--id nightly), and
a generated one is a lower-case ULID to look like such names. (Run ids are
inverted ULIDs, newest first; batch ids plain ULIDs: see docs/CLI.md.)`,
	}
	cmd.AddCommand(newSchedulesCreateCmd(cf), newSchedulesListCmd(cf), newSchedulesGetCmd(cf),
		newSchedulesPauseCmd(cf, true), newSchedulesPauseCmd(cf, false), newSchedulesDeleteCmd(cf), newSchedulesBackfillCmd(cf))
	return cmd
}

func printSchedule(w io.Writer, s *sdk.Schedule, asJSON bool) error {
	if asJSON {
		return printJSON(w, s)
	}
	fmt.Fprintf(w, "schedule %s: %s %q (%s), overlap %s, next %s, fired %d, skipped %d, missed %d, failed %d\n",
		s.ID, s.Workflow, s.Cron, s.TimeZone, s.Overlap, nextTick(s), s.Fired, s.Skipped, s.Missed, s.Failed)
	if s.LastRun != "" {
		fmt.Fprintf(w, "  last run %s\n", s.LastRun)
	}
	if s.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", s.LastError)
	}
	return nil
}

// nextTick is when a schedule fires next, or "paused".
func nextTick(s *sdk.Schedule) string {
	if s.NextAt == nil {
		return "paused"
	}
	return stamp(*s.NextAt)
}

func newSchedulesCreateCmd(cf *clientFlags) *cobra.Command {
	var (
		o      sdk.ScheduleOptions
		input  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "create <workflow> <cron>",
		Short: "Create a schedule",
		Example: `  cairn schedules create report '0 2 * * *' --tz Europe/Paris --input '{"period":"day"}'
  cairn schedules create sync '@every 15m' --id sync-15m --overlap cancel_previous`,
		Args: cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			var err error
			if o.Input, err = optionalJSONArg(cmd, "input", input); err != nil {
				return err
			}
			s, err := c.CreateSchedule(cmd.Context(), args[0], args[1], o)
			if err != nil {
				return err
			}
			return printSchedule(cmd.OutOrStdout(), s, asJSON)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.ID, "id", "", "schedule id (default generated)")
	f.StringVar(&o.Version, "version", "", "workflow version (default the newest at each tick)")
	f.StringVar(&o.TimeZone, "tz", "", "IANA time zone of the expression (default UTC)")
	f.StringVar(&input, "input", "", "input of each run: JSON, @file or - for stdin")
	f.StringVar(&o.Overlap, "overlap", "", "while the previous run runs: skip (default), allow or cancel_previous")
	f.BoolVar(&o.Paused, "paused", false, "create it paused")
	f.StringVar(&o.Description, "description", "", "free text")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSchedulesListCmd(cf *clientFlags) *cobra.Command {
	of := new(outputFlag)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List schedules",
		Args:  cobra.NoArgs,
		RunE: cf.runOutput(of, func(cmd *cobra.Command, args []string, c *sdk.Client, format string) error {
			all := []sdk.Schedule{}
			cursor := ""
			for {
				p, err := c.ListSchedules(cmd.Context(), 100, cursor)
				if err != nil {
					return err
				}
				all = append(all, p.Schedules...)
				if cursor = p.NextCursor; cursor == "" {
					break
				}
			}
			return emitList(cmd.OutOrStdout(), format, all,
				"no schedules (create one: cairn schedules create <workflow> '0 2 * * *')",
				"SCHEDULE\tWORKFLOW\tCRON\tTZ\tOVERLAP\tNEXT\tFIRED\tSKIPPED\tFAILED\tLAST RUN\tLAST ERROR",
				func(s sdk.Schedule) string {
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s", s.ID, s.Workflow, s.Cron, s.TimeZone, s.Overlap, nextTick(&s), s.Fired, s.Skipped, s.Failed, s.LastRun, abbrev(s.LastError, 60))
				})
		}),
	}
	of.addTo(cmd)
	return cmd
}

func newSchedulesGetCmd(cf *clientFlags) *cobra.Command {
	of := new(outputFlag)
	cmd := &cobra.Command{
		Use:   "get <schedule>",
		Short: "Show a schedule",
		Args:  cobra.ExactArgs(1),
		RunE: cf.runOutput(of, func(cmd *cobra.Command, args []string, c *sdk.Client, format string) error {
			s, err := c.GetSchedule(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return emit(out, format, s, []any{s}, func() error { return printSchedule(out, s, false) })
		}),
	}
	of.addTo(cmd)
	return cmd
}

func newSchedulesPauseCmd(cf *clientFlags, pause bool) *cobra.Command {
	var asJSON bool
	use, short := "resume <schedule>", "Resume a paused schedule from now on"
	if pause {
		use, short = "pause <schedule>", "Pause a schedule"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			f := c.ResumeSchedule
			if pause {
				f = c.PauseSchedule
			}
			s, err := f(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printSchedule(cmd.OutOrStdout(), s, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSchedulesDeleteCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <schedule>",
		Short: "Delete a schedule (its runs stay)",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			if err := c.DeleteSchedule(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted schedule %s\n", args[0])
			return nil
		}),
	}
}

func newSchedulesBackfillCmd(cf *clientFlags) *cobra.Command {
	var (
		since  time.Duration
		from   string
		to     string
		max    int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "backfill <schedule>",
		Short: "Start the runs of past ticks (at most 100 per call)",
		Example: `  cairn schedules backfill report --since 72h
  cairn schedules backfill report --from 2026-01-01T00:00:00Z --to 2026-01-08T00:00:00Z --max 10`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) (err error) {
			end := time.Now()
			if to != "" {
				if end, err = time.Parse(time.RFC3339, to); err != nil {
					return fmt.Errorf("--to: %w", err)
				}
			}
			start := end.Add(-since)
			if from != "" {
				if start, err = time.Parse(time.RFC3339, from); err != nil {
					return fmt.Errorf("--from: %w", err)
				}
			} else if since <= 0 {
				return fmt.Errorf("give --from or --since")
			}
			r, err := c.BackfillSchedule(cmd.Context(), args[0], start, end, max)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, r)
			}
			for _, t := range r.Ticks {
				verb := "started"
				if t.Existed {
					verb = "had"
				}
				fmt.Fprintf(out, "%s  %s run %s\n", stamp(t.Tick), verb, t.Run)
			}
			if r.Truncated {
				fmt.Fprintln(cmd.ErrOrStderr(), "more ticks in the range: backfill again from the last tick")
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.DurationVar(&since, "since", 0, "ticks in the last duration (instead of --from)")
	f.StringVar(&from, "from", "", "ticks after this RFC 3339 time")
	f.StringVar(&to, "to", "", "ticks up to this RFC 3339 time (default now)")
	f.IntVar(&max, "max", 0, "at most this many ticks (default and cap 100)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newRunsDeleteCmd(cf *clientFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete <run>",
		Short: "Delete an ended run now (record, leases, idempotency key); needs an admin key",
		Long: `delete removes an ended run before its retention (CAIRN_RETENTION) would.
A running run is refused unless --force, which cancels it first.`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			if err := c.DeleteRun(cmd.Context(), args[0], force); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted run %s\n", args[0])
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "cancel the run first if it still runs")
	return cmd
}
