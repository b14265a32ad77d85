package main

import (
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
		newRunsCmd(cf), newWorkersCmd(cf), newWorkflowsCmd(cf), newBenchCmd(), newSchedulesCmd(cf))
	return root
}
