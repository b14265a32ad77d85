package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

// streamDrain is how long a watch waits, once the run ended, for the
// stream to deliver the progress sent just before.
var streamDrain = 2 * time.Second

// followProgress prints the progress values a run's steps publish, read
// from the run's stream, until the run ends or ctx does. The returned
// wait lets it finish, up to streamDrain. A server without streams, or a
// stream that fails, prints nothing: the status lines go on without it.
func (p *progress) followProgress(ctx context.Context, c *sdk.Client, id string) (wait func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range c.Stream(ctx, id) {
			if err != nil {
				return
			}
			if ev.Kind == cairn.StreamProgress {
				p.progressLine(ev.Progress)
			}
		}
	}()
	return func() {
		select {
		case <-done:
		case <-time.After(streamDrain):
		}
		cancel()
		<-done
	}
}

// progressLine prints one progress value, above the status line.
func (p *progress) progressLine(ev *sdk.ProgressEvent) {
	p.lock()
	defer p.unlock()
	p.clearLine()
	fmt.Fprintf(p.out, "%8s  %-28s progress %s\n", "+"+shortDuration(p.elapsed()), fmt.Sprintf("%s #%d", ev.Step, ev.Attempt), abbrev(string(ev.Value), 100))
	p.statusLine()
}
