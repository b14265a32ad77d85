// Command cairn is cairn's command line: a local dev server, the API
// server and the reaper, and a client for runs and workers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cairn-dev/cairn/internal/serve"
)

func main() {
	ctx, stopped, stop := withStopSignals(context.Background())
	err := Run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, errorLine(err))
	}
	os.Exit(exitStatus(err, stopped()))
}

// Run runs the command line args (without the program's name) until it is
// done or ctx ends.
func Run(ctx context.Context, args []string) error {
	root := newRootCmd()
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// withStopSignals is serve.WithStopSignals that also tells which stop
// signal ended ctx (nil while none did).
func withStopSignals(parent context.Context) (ctx context.Context, stopped func() os.Signal, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	var got atomic.Value
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, serve.StopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			got.Store(s)
			cancel()
		case <-done:
		}
	}()
	stopped = func() os.Signal {
		s, _ := got.Load().(os.Signal)
		return s
	}
	stop = func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
	return ctx, stopped, stop
}

// errorLine is the line printed for a command's error: prefixed with
// "cairn: " once, even when the error says "cairn: " itself (the SDK's
// errors do).
func errorLine(err error) string {
	return "cairn: " + strings.TrimPrefix(err.Error(), "cairn: ")
}

// exitStatus is the process's exit status after a command returned err:
// 0 when it succeeded (a server that drained after Ctrl-C, a journal
// --follow stopped), 128+n when a stop signal n cut it short (130 for
// Ctrl-C, 143 for SIGTERM, as shells report a process killed by them),
// else 1.
func exitStatus(err error, stopped os.Signal) int {
	if err == nil {
		return 0
	}
	if s, ok := stopped.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}
