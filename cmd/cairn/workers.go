package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

func newWorkersCmd(cf *clientFlags) *cobra.Command {
	of := new(outputFlag)
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List registered workers and the workflows they serve",
		Args:  cobra.NoArgs,
		RunE: cf.runOutput(of, func(cmd *cobra.Command, args []string, c *sdk.Client, format string) error {
			ws, err := c.Workers(cmd.Context())
			if err != nil {
				return err
			}
			if ws == nil {
				ws = []sdk.WorkerInfo{}
			}
			return emitList(cmd.OutOrStdout(), format, ws,
				"no workers registered (start one: go run ./examples/triage)",
				"WORKER\tSTATE\tLAST SEEN\tWORKFLOWS\tREGISTERED\tLABELS",
				func(w sdk.WorkerInfo) string {
					var labels []string
					for k, v := range w.Labels {
						labels = append(labels, k+"="+v)
					}
					sort.Strings(labels)
					state := "gone"
					if w.Alive {
						state = "alive"
					}
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", w.ID, state, ago(w.LastSeenAt), strings.Join(w.Workflows, ", "), ago(w.RegisteredAt), strings.Join(labels, ","))
				})
		}),
	}
	of.addTo(cmd)
	return cmd
}

func newWorkflowsCmd(cf *clientFlags) *cobra.Command {
	var (
		of      = new(outputFlag)
		version string
	)
	cmd := &cobra.Command{
		Use:   "workflows [name]",
		Short: "List registered workflows, or show one's definition",
		Example: `  cairn workflows
  cairn workflows triage --version 1
  cairn workflows triage -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: cf.runOutput(of, func(cmd *cobra.Command, args []string, c *sdk.Client, format string) error {
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				w, err := c.Workflow(cmd.Context(), args[0], version)
				if err != nil {
					return err
				}
				return emit(out, format, w, []any{w}, func() error { return printWorkflow(out, w) })
			}
			ws, err := c.Workflows(cmd.Context())
			if err != nil {
				return err
			}
			if ws == nil {
				ws = []sdk.WorkflowSummary{}
			}
			return emitList(out, format, ws,
				"no workflows registered (workers register theirs: go run ./examples/triage)",
				"WORKFLOW\tLATEST\tVERSIONS",
				func(w sdk.WorkflowSummary) string {
					return fmt.Sprintf("%s\t%s\t%s", w.Name, w.Latest, strings.Join(w.Versions, ", "))
				})
		}),
	}
	of.addTo(cmd)
	cmd.Flags().StringVar(&version, "version", "", "with a name: the version to show (default: the latest)")
	return cmd
}

// printWorkflow shows a definition for people: its steps and how they
// connect (-o json has every field).
func printWorkflow(out io.Writer, w *cairn.Workflow) error {
	fmt.Fprintf(out, "workflow  %s@%s\n", w.Name, w.Version)
	if w.Description != "" {
		fmt.Fprintf(out, "          %s\n", w.Description)
	}
	for _, t := range w.On {
		cond := ""
		if t.If != "" {
			cond = " if " + abbrev(t.If, 60)
		}
		fmt.Fprintf(out, "on        event %s%s\n", t.Event, cond)
	}
	if w.Debounce != nil {
		fmt.Fprintf(out, "debounce  %s\n", w.Debounce)
	}
	if w.Batch != nil {
		fmt.Fprintf(out, "batch     %s\n", w.Batch)
	}
	fmt.Fprintln(out)
	tw := newTable(out)
	fmt.Fprintln(tw, "STEP\tKIND\tAFTER\tDETAIL")
	for _, s := range w.Steps {
		var detail []string
		if s.Event != "" {
			detail = append(detail, "event "+s.Event)
		}
		if s.When != "" {
			detail = append(detail, "when "+abbrev(s.When, 40))
		}
		after := strings.Join(s.After, ", ")
		if after == "" {
			after = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.EffectiveKind(), after, strings.Join(detail, "; "))
	}
	return tw.Flush()
}
