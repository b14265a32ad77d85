package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

func newStoreCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Read, write, delete and list keys of the long-term store",
		Long: `store reads and writes the long-term store: a key-value store, kept in the
bucket, for data that outlives runs. Keys live in namespaces. Needs a key
with the store scope. Values encrypted by a client's keyring print decrypted
with --keys, else as <encrypted KID>; values written here are not encrypted.`,
	}
	cmd.AddCommand(newStoreGetCmd(cf), newStorePutCmd(cf), newStoreDeleteCmd(cf), newStoreListCmd(cf))
	return cmd
}

func newStoreGetCmd(cf *clientFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "get <namespace> <key>",
		Short:   "Print a key's value and version",
		Example: `  cairn store get memory user:42`,
		Args:    cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			e, err := c.Store(args[0]).Get(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			if asJSON {
				d, err := cf.pl.doc(e)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), d)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s (version %s, updated %s)\n%s\n", e.Namespace, e.Key, e.Version, stamp(e.UpdatedAt), cf.pl.text(e.Value))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entry as JSON")
	return cmd
}

func newStorePutCmd(cf *clientFlags) *cobra.Command {
	var cond sdk.StoreCondition
	cmd := &cobra.Command{
		Use:   "put <namespace> <key> <json|@file|->",
		Short: "Write a key's value (any JSON value)",
		Example: `  cairn store put memory user:42 '{"tone":"formal"}'
  cairn store put memory user:42 @prefs.json --if-version AbC
  cairn store put locks nightly true --if-absent`,
		Args: cobra.ExactArgs(3),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			v, err := readJSONArg(cmd, "value", args[2])
			if err != nil {
				return err
			}
			e, err := c.Store(args[0]).Put(cmd.Context(), args[1], v, cond)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s: version %s\n", e.Namespace, e.Key, e.Version)
			return nil
		}),
	}
	cmd.Flags().StringVar(&cond.IfVersion, "if-version", "", "write only over this version of the value")
	cmd.Flags().BoolVar(&cond.IfAbsent, "if-absent", false, "write only when the key has no value")
	return cmd
}

func newStoreDeleteCmd(cf *clientFlags) *cobra.Command {
	var ifVersion string
	cmd := &cobra.Command{
		Use:   "delete <namespace> <key>",
		Short: "Delete a key's value",
		Args:  cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			return c.Store(args[0]).Delete(cmd.Context(), args[1], ifVersion)
		}),
	}
	cmd.Flags().StringVar(&ifVersion, "if-version", "", "delete only this version of the value")
	return cmd
}

func newStoreListCmd(cf *clientFlags) *cobra.Command {
	var prefix string
	cmd := &cobra.Command{
		Use:   "list <namespace>",
		Short: "List a namespace's keys (with --prefix, those that start with it)",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			t := newTable(cmd.OutOrStdout())
			fmt.Fprintln(t, "KEY\tSIZE\tUPDATED\tVERSION")
			for k, err := range c.Store(args[0]).Keys(cmd.Context(), prefix) {
				if err != nil {
					return err
				}
				fmt.Fprintf(t, "%s\t%d\t%s\t%s\n", k.Key, k.Size, stamp(k.UpdatedAt), k.Version)
			}
			return t.Flush()
		}),
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only keys that start with this")
	return cmd
}
