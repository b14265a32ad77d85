package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

func newCacheCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Invalidate the result cache of a workflow's step",
		Long: `cache manages the steps' result cache: a task step with a cache is completed
from the output an earlier attempt computed for its key, without a worker.
Needs a key with the execute scope.`,
	}
	cmd.AddCommand(newCacheInvalidateCmd(cf))
	return cmd
}

func newCacheInvalidateCmd(cf *clientFlags) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "invalidate <workflow> <step>",
		Short: "Delete a step's cache entries (every key, or --key's)",
		Example: `  cairn cache invalidate fetch get
  cairn cache invalidate fetch get --key '"https://example.com"'`,
		Args: cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			var n int
			var err error
			if cmd.Flags().Changed("key") {
				if !json.Valid([]byte(key)) {
					return fmt.Errorf("--key: not JSON (a string is quoted: '\"%s\"')", key)
				}
				n, err = c.InvalidateCacheKey(cmd.Context(), args[0], args[1], json.RawMessage(key))
			} else {
				n, err = c.InvalidateCache(cmd.Context(), args[0], args[1])
			}
			if err != nil {
				return err
			}
			word := "entries"
			if n == 1 {
				word = "entry"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s: %d %s deleted\n", args[0], args[1], n, word)
			return nil
		}),
	}
	cmd.Flags().StringVar(&key, "key", "", "only this key's entry: the key's value, as JSON")
	return cmd
}
