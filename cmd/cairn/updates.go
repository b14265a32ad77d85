package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

// updateHold is how long one request of `runs update --wait` holds for
// the answer before it asks again.
const updateHold = 30 * time.Second

func newRunsUpdateCmd(cf *clientFlags) *cobra.Command {
	var input, id string
	var wait, asJSON bool
	cmd := &cobra.Command{
		Use:   "update <run> <name>",
		Short: "Send an update to a run and print its answer",
		Long: `update sends a request to a live run: the first wait step waiting for
its name (or a function's wait) takes it, and its answer is the output of
the step the wait names as its answer (the wait's own, the input, when it
names none), or what the function replies. Without --wait the command
answers at once: an update not answered yet is printed as accepted; run
the command again with the same --id to get its answer (the run gets the
update once).`,
		Example: `  cairn runs update 7YBQ… approve --input '{"by":"ana"}' --wait`,
		Args:    cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			in, err := optionalJSONArg(cmd, "input", input)
			if err != nil {
				return err
			}
			opts := sdk.UpdateOptions{ID: id}
			if wait {
				opts.Wait = updateHold
			}
			u, err := c.SendUpdate(cmd.Context(), args[0], args[1], in, opts)
			for err == nil && wait && !u.Done() {
				u, err = c.GetUpdate(cmd.Context(), args[0], u.ID, updateHold)
			}
			if err != nil {
				return err
			}
			return printUpdate(cmd, u, asJSON)
		}),
	}
	cmd.Flags().StringVar(&input, "input", "", "update input: JSON, @file, or - for stdin")
	cmd.Flags().StringVar(&id, "id", "", "update id: sending the same id again answers the same update (default: a new id)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the update is answered")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the update as JSON")
	return cmd
}

// printUpdate prints an update: its answer, that it is not answered
// yet, or (as the command's error) why it failed.
func printUpdate(cmd *cobra.Command, u *sdk.Update, asJSON bool) error {
	out := cmd.OutOrStdout()
	switch {
	case asJSON:
		return printJSON(out, u)
	case u.Status == sdk.UpdateAnswered:
		fmt.Fprintf(out, "update %s %s: answered (taken by step %s)\n%s\n", u.Name, u.ID, u.Step, u.Answer)
	case u.Status == sdk.UpdateFailed:
		return fmt.Errorf("update %s %s failed: %s", u.Name, u.ID, u.Error.Message)
	case u.Step == "":
		fmt.Fprintf(out, "update %s %s: accepted, kept for the next wait for it; run again with --id %s for the answer\n", u.Name, u.ID, u.ID)
	default:
		fmt.Fprintf(out, "update %s %s: taken by step %s, not answered yet; run again with --id %s for the answer\n", u.Name, u.ID, u.Step, u.ID)
	}
	return nil
}
