package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/api"
)

func newOpenAPICmd() *cobra.Command {
	var format string
	var downgrade bool
	cmd := &cobra.Command{
		Use:   "openapi",
		Short: "Print the API's OpenAPI document (3.1, or 3.0 with --downgrade)",
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := api.Spec()
			var b []byte
			var err error
			if downgrade {
				b, err = spec.Downgrade()
			} else {
				b, err = json.MarshalIndent(spec, "", "  ")
			}
			if err != nil {
				return err
			}
			if format == "yaml" {
				if b, err = yaml.JSONToYAML(b); err != nil {
					return err
				}
			} else if downgrade {
				var v any
				if err := json.Unmarshal(b, &v); err != nil {
					return err
				}
				b, _ = json.MarshalIndent(v, "", "  ")
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "json or yaml")
	cmd.Flags().BoolVar(&downgrade, "downgrade", false, "OpenAPI 3.0.3 instead of 3.1")
	return cmd
}
