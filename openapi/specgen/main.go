// Command specgen prints the API's OpenAPI document, as `cairn openapi`
// does, from package api alone: `make openapi` runs it, so the document
// (and the clients generated from it) can be regenerated while an SDK or
// the CLI does not yet build against the old clients.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cairn-dev/cairn/api"
)

func main() {
	format := flag.String("format", "json", "json or yaml")
	downgrade := flag.Bool("downgrade", false, "OpenAPI 3.0.3 instead of 3.1")
	flag.Parse()
	b, err := api.SpecDocument(*format, *downgrade)
	if err != nil {
		fmt.Fprintln(os.Stderr, "specgen:", err)
		os.Exit(1)
	}
	fmt.Println(string(b))
}
