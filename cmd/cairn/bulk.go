package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

// cairn batches: bulk cancel and rerun of the runs matching a filter.

func newBatchesCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batches",
		Short: "Cancel, rerun, pause or resume every run matching a filter, as a tracked batch",
		Long: `batches act on every run matching a filter (status, workflow, start
time; at least one), newest first: cancel each running one, rerun each
ended one (once), pause each running one or resume each paused one. The server does the first 100 runs; the reaper does the
rest, and goes on where a dead instance stopped. Talks to a cairn server
(--server, default $CAIRN_SERVER or http://127.0.0.1:8080) with the key in
--key or $CAIRN_KEY.

Batch ids are plain ULIDs: unique, and they tell when the batch started.
(Run ids are ULIDs with inverted time, newest first; schedule ids lower
case: see docs/CLI.md.)`,
	}
	cmd.AddCommand(newBatchStartCmd(cf, sdk.BatchCancel), newBatchStartCmd(cf, sdk.BatchRerun),
		newBatchStartCmd(cf, sdk.BatchPause), newBatchStartCmd(cf, sdk.BatchResume), newBatchGetCmd(cf))
	return cmd
}

func printBatch(w io.Writer, b *sdk.Batch, asJSON bool) error {
	if asJSON {
		return printJSON(w, b)
	}
	fmt.Fprintf(w, "batch %s: %s, %s: scanned %d, matched %d, applied %d, skipped %d, failed %d\n",
		b.ID, b.Action, b.State, b.Scanned, b.Matched, b.Applied, b.Skipped, b.Failed)
	for _, e := range b.Errors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	return nil
}

func newBatchStartCmd(cf *clientFlags, action string) *cobra.Command {
	var (
		statuses      []string
		workflow      string
		after, before string
		reason        string
		wait, asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   action,
		Short: "Start a batch that runs " + action + " on every matching run",
		Example: `  cairn batches cancel --workflow billing --status running --reason "bad deploy"
  cairn batches rerun --status failed --started-after 2026-11-30T00:00:00Z --wait
  cairn batches pause --workflow billing --status running
  cairn batches resume --workflow billing --status paused`,
		Args: cobra.NoArgs,
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			f := sdk.BatchFilter{Workflow: workflow}
			for _, s := range statuses {
				f.Status = append(f.Status, cairn.RunStatus(s))
			}
			for _, x := range []struct {
				flag, v string
				to      **time.Time
			}{{"started-after", after, &f.StartedAfter}, {"started-before", before, &f.StartedBefore}} {
				if x.v == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339, x.v)
				if err != nil {
					return fmt.Errorf("--%s: want an RFC 3339 time such as 2026-11-30T00:00:00Z: %w", x.flag, err)
				}
				*x.to = &t
			}
			b, err := c.StartBatch(cmd.Context(), action, f, reason)
			if err != nil {
				return err
			}
			if wait && !b.Done() {
				if b, err = c.WaitBatch(cmd.Context(), b.ID, time.Second); err != nil {
					return err
				}
			}
			return printBatch(cmd.OutOrStdout(), b, asJSON)
		}),
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&statuses, "status", nil, "runs in these statuses (repeat or comma-separate)")
	fl.StringVar(&workflow, "workflow", "", "runs of this workflow")
	fl.StringVar(&after, "started-after", "", "runs started at or after this RFC 3339 time")
	fl.StringVar(&before, "started-before", "", "runs started before this RFC 3339 time")
	if action == sdk.BatchCancel {
		fl.StringVar(&reason, "reason", "", "recorded with each cancel")
	}
	fl.BoolVar(&wait, "wait", false, "wait until the batch is done")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newBatchGetCmd(cf *clientFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get <batch>",
		Short: "Show a batch's progress",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			b, err := c.GetBatch(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printBatch(cmd.OutOrStdout(), b, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
