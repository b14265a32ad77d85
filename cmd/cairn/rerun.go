package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

func newRunsRerunCmd(cf *clientFlags) *cobra.Command {
	var (
		from, ikey   string
		wait, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rerun <run>",
		Short: "Start a new run from an ended one, reusing its completed steps",
		Long: `rerun starts a new run of an ended run's workflow version, with its input,
correlation and final state. Every step that completed in the old run keeps
its output and does not run again, except --from and the steps after it.
The new run names the old one (rerun_of); the old run is not changed.`,
		Example: `  cairn runs rerun 7YBQ8AW8WZN0T33XRQSRCZBFT4 --wait           # retry what failed
  cairn runs rerun 7YBQ8AW8WZN0T33XRQSRCZBFT4 --from route     # run route and what follows again`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			r, err := c.Rerun(cmd.Context(), args[0], sdk.RerunOptions{FromStep: from, IdempotencyKey: ikey})
			if err != nil {
				return err
			}
			return startedRun(cmd, c, cf.pl, r, wait, asJSON,
				fmt.Sprintf("started run %s (%s@%s), rerun of %s: %d/%d steps reused", r.ID, r.Workflow, r.Version, args[0], r.StepsDone, r.StepsTotal),
				fmt.Sprintf("run %s (%s@%s), rerun of %s", r.ID, r.Workflow, r.Version, args[0]))
		}),
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "run this step and every step after it again (default: only what did not complete)")
	f.StringVar(&ikey, "idempotency-key", "", "rerunning again with this key returns the first rerun")
	f.BoolVar(&wait, "wait", false, "show progress until the new run ends, then its output")
	f.BoolVar(&asJSON, "json", false, "print the new run as JSON")
	return cmd
}
