package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Output formats of the listing and get commands (-o/--output).
const (
	outTable = "table" // aligned columns for people: the default
	outJSON  = "json"  // one JSON document (an array, or the listing's page object)
	outJSONL = "jsonl" // one compact JSON object per line, per item
)

// outputFlag is the -o/--output flag of a command, with --json kept as
// a synonym of -o json.
type outputFlag struct {
	format string
	json   bool
}

// addTo adds -o/--output (and --json) to cmd.
func (o *outputFlag) addTo(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", outTable, "output format: table, json or jsonl (one object per line)")
	cmd.Flags().BoolVar(&o.json, "json", false, "same as -o json")
}

// get returns the chosen format, or an error naming the flag.
func (o *outputFlag) get() (string, error) {
	switch o.format {
	case outTable, outJSON, outJSONL:
	default:
		return "", fmt.Errorf("--output %q: want table, json or jsonl", o.format)
	}
	if o.json {
		if o.format == outJSONL {
			return "", fmt.Errorf("--json and -o jsonl disagree: give one")
		}
		return outJSON, nil
	}
	return o.format, nil
}

// emit prints a listing or one object in format: json prints doc as one
// indented document, jsonl each item on its own line, table calls table.
func emit[T any](w io.Writer, format string, doc any, items []T, table func() error) error {
	switch format {
	case outJSON:
		return printJSON(w, doc)
	case outJSONL:
		for _, it := range items {
			if err := printJSONLine(w, it); err != nil {
				return err
			}
		}
		return nil
	}
	return table()
}

// emitList prints a listing of items in format (see emit); as a table,
// empty when there are none, else header and a line per item, row giving
// its tab-separated columns.
func emitList[T any](w io.Writer, format string, items []T, empty, header string, row func(T) string) error {
	return emit(w, format, items, items, func() error {
		if len(items) == 0 {
			fmt.Fprintln(w, empty)
			return nil
		}
		tw := newTable(w)
		fmt.Fprintln(tw, header)
		for _, it := range items {
			fmt.Fprintln(tw, row(it))
		}
		return tw.Flush()
	})
}

// printJSONLine writes v as one line of compact JSON.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
