package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/progress"
	"github.com/cairn-dev/cairn/notify"
)

// Progress hands a step's progress value to its run's watchers
// (engine/internal/progress): on this instance at once, on the others
// over the bus. It writes nothing. The lease is proven from the lease
// cache when this instance holds it, else by one read per lease and
// instance; a message over the lease's rate is a *progress.RateError.
func (e *Engine) Progress(ctx context.Context, id string, value json.RawMessage) error {
	tok, err := leaseArg(id)
	if err != nil {
		return err
	}
	return e.progress.Hand(ctx, e.cfg.Bus, e.log, tok.Raw, notify.Progress{Run: tok.Run, Step: tok.Step, Attempt: tok.Attempt, Value: value}, progress.Lease{
		Cached: func() bool { _, _, cached := e.leases.Cached(tok); return cached },
		Live: func(ctx context.Context) (bool, error) {
			_, l, _, err := e.lease(ctx, tok)
			return err == nil && l.State == leaseActive, err
		},
	})
}

// ProgressRateError refuses a progress message over its lease's rate.
type ProgressRateError = progress.RateError

// WatchProgress subscribes to run's progress messages on this instance
// (those accepted here, and those heard on the bus); stop ends it.
func (e *Engine) WatchProgress(run string) (*progress.Sub, func()) {
	return e.progress.Subscribe(run)
}

// RunStream is GetRunStatus with the run's journal as its record holds it
// (oldest first, append-only): what a run's event stream sends.
func (e *Engine) RunStream(ctx context.Context, id string, after int64, wait time.Duration) (*cairn.RunProgress, []cairn.JournalEntry, error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, nil, err
	}
	r, err := e.watchRun(ctx, id, after, false, wait)
	if err != nil {
		return nil, nil, err
	}
	return e.status(ctx, r), r.Journal, nil
}
