package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

func newWorkersCmd(cf *clientFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List registered workers and the workflows they serve",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			ws, err := c.Workers(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if ws == nil {
					ws = []sdk.WorkerInfo{}
				}
				return printJSON(out, ws)
			}
			if len(ws) == 0 {
				fmt.Fprintln(out, "no workers registered (start one: go run ./examples/triage)")
				return nil
			}
			tw := newTable(out)
			fmt.Fprintln(tw, "WORKER\tSTATE\tLAST SEEN\tWORKFLOWS\tREGISTERED\tLABELS")
			for _, w := range ws {
				var labels []string
				for k, v := range w.Labels {
					labels = append(labels, k+"="+v)
				}
				sort.Strings(labels)
				state := "gone"
				if w.Alive {
					state = "alive"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", w.ID, state, ago(w.LastSeenAt), strings.Join(w.Workflows, ", "), ago(w.RegisteredAt), strings.Join(labels, ","))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newWorkflowsCmd(cf *clientFlags) *cobra.Command {
	var (
		asJSON  bool
		version string
	)
	cmd := &cobra.Command{
		Use:   "workflows [name]",
		Short: "List registered workflows, or show one's definition",
		Example: `  cairn workflows
  cairn workflows triage --version 1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				w, err := c.Workflow(cmd.Context(), args[0], version)
				if err != nil {
					return err
				}
				return printJSON(out, w)
			}
			ws, err := c.Workflows(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if ws == nil {
					ws = []sdk.WorkflowSummary{}
				}
				return printJSON(out, ws)
			}
			if len(ws) == 0 {
				fmt.Fprintln(out, "no workflows registered (workers register theirs: go run ./examples/triage)")
				return nil
			}
			tw := newTable(out)
			fmt.Fprintln(tw, "WORKFLOW\tLATEST\tVERSIONS")
			for _, w := range ws {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", w.Name, w.Latest, strings.Join(w.Versions, ", "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (a definition always prints as JSON)")
	cmd.Flags().StringVar(&version, "version", "", "with a name: the version to show (default: the latest)")
	return cmd
}
