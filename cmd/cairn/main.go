// Command cairn is cairn's command line: a local dev server, the API
// server and the reaper, and a client for runs and workers.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cairn-dev/cairn/internal/serve"
)

func main() {
	ctx, stop := serve.WithStopSignals(context.Background())
	err := Run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(1)
	}
}

// Run runs the command line args (without the program's name) until it is
// done or ctx ends.
func Run(ctx context.Context, args []string) error {
	root := newRootCmd()
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
