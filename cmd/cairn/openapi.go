package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/api"
)

func newOpenAPICmd() *cobra.Command {
	var format string
	var downgrade bool
	cmd := &cobra.Command{
		Use:   "openapi",
		Short: "Print the API's OpenAPI document (3.1, or 3.0 with --downgrade)",
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := api.SpecDocument(format, downgrade)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "json or yaml")
	cmd.Flags().BoolVar(&downgrade, "downgrade", false, "OpenAPI 3.0.3 instead of 3.1")
	return cmd
}
