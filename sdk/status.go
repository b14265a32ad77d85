package sdk

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// RunProgress is a run's progress without its contents: status, rev and
// per-step progress (GET /runs/{run}/status; not audited).
type RunProgress = cairn.RunProgress

// StatusOptions choose what Status waits for and reads.
type StatusOptions struct {
	// After, with Wait, holds the call until the run's rev exceeds After
	// or the run ends.
	After int64
	// Wait is the longest the server holds the call (0: answer at once).
	Wait time.Duration
	// Holders also reads who holds each ready task step (one lease read
	// per ready step on the server): a claim does not change the rev, so
	// a display that shows "waiting for a worker" re-reads with it.
	Holders bool
}

// Status reads a run's progress once (GET /runs/{run}/status), holding
// up to o.Wait for a change after o.After. Watch follows a run with it.
func (c *Client) Status(ctx context.Context, run string, o StatusOptions) (*RunProgress, error) {
	params := &client.GetRunStatusParams{}
	if o.Wait > 0 {
		params.After, params.WaitMs = ptr(o.After), ptr(o.Wait.Milliseconds())
	}
	if o.Holders {
		params.Holders = ptr(true)
	}
	return decodeView[cairn.RunProgress](c)(c.api.GetRunStatus(ctx, run, params))
}

// Temporary reports whether err is worth retrying: the server unreachable
// or answering that it is busy or briefly unavailable.
func Temporary(err error) bool { return temporary(err) }

// ProgressRun is the part of a Run that a progress read carries, as a
// Run (what Watch hands its callback while the run runs).
func ProgressRun(p *RunProgress) *Run { return progressRun(p) }
