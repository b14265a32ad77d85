package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

func newEventsCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "events", Short: "Publish events: they start runs of the workflows whose triggers match"}
	cmd.AddCommand(newEventsPublishCmd(cf))
	return cmd
}

func newEventsPublishCmd(cf *clientFlags) *cobra.Command {
	var payload, id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "publish <name>",
		Short:   "Publish an event: every workflow with a trigger it matches gets a run (once per --id)",
		Example: `  cairn events publish order.created --payload '{"order":42,"total":120}' --id order-42`,
		Args:    cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			p, err := optionalJSONArg(cmd, "payload", payload)
			if err != nil {
				return err
			}
			res, err := c.Publish(cmd.Context(), args[0], p, sdk.PublishOptions{ID: id})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, res)
			}
			windows := 0
			for _, r := range res.Runs {
				if r.Window != "" {
					windows++
				}
			}
			if windows == 0 {
				fmt.Fprintf(out, "event %s (id %s): %d run(s)\n", args[0], res.ID, len(res.Runs))
			} else {
				fmt.Fprintf(out, "event %s (id %s): %d run(s), %d window(s) joined\n", args[0], res.ID, len(res.Runs)-windows, windows)
			}
			for _, r := range res.Runs {
				how := "started"
				switch {
				case r.Window != "":
					r.Run, how = "window "+r.Window, "joined: its run starts when it closes"
				case r.Existed:
					how = "already started by this id"
				}
				fmt.Fprintf(out, "  %s@%s  %s  %s\n", r.Workflow, r.Version, r.Run, how)
			}
			if res.Truncated {
				fmt.Fprintln(out, "  (more workflows have a trigger of this name than one publish matches)")
			}
			for _, run := range res.Cancelled {
				fmt.Fprintf(out, "  cancelled %s (its workflow's cancel_on matched)\n", run)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&payload, "payload", "", "event payload (the runs' input): JSON, @file, or - for stdin")
	cmd.Flags().StringVar(&id, "id", "", "event id: publishing the same id again starts nothing twice (default: a new one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
