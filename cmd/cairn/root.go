package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Version:       cairn.Build().String(),
		Short:         "cairn: durable workflows on an object-storage bucket",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cf := addClientFlags(root)
	root.AddCommand(newDevCmd(), newOpenAPICmd(), newServeCmd(), newReaperCmd(),
		newRunsCmd(cf), newWorkersCmd(cf), newWorkflowsCmd(cf), newBenchCmd(), newSchedulesCmd(cf), newBatchesCmd(cf), newStoreCmd(cf), newEventsCmd(cf), newCacheCmd(cf))
	refuseUnknownSubcommands(root)
	completeArgs(root, cf)
	return root
}

// refuseUnknownSubcommands makes every command group (runs, workflows…)
// answer an unknown subcommand with an error, so the process exits
// non-zero: cobra does that for the root only, and prints the group's
// help with status 0 otherwise. A group given no argument prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if c == c.Root() || !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q; see %s --help", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
}
