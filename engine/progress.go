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
	if len(value) > progress.MaxValueBytes {
		return &InvalidError{Field: "value", Message: "over the progress limit of 16 KiB"}
	}
	proven, err := e.progress.Admit(tok.Raw)
	if err != nil {
		return err
	}
	if _, _, cached := e.cachedLease(tok); !cached && !proven {
		if _, l, _, err := e.lease(ctx, tok); err != nil {
			return err
		} else if l.State != leaseActive {
			e.progress.Forget(tok.Raw)
			return reject(cairn.ReasonFenced, "lease of attempt %d of step %s has ended", tok.Attempt, tok.Step)
		}
		e.progress.Prove(tok.Raw)
	}
	p := e.progress.Accepted(notify.Progress{Run: tok.Run, Step: tok.Step, Attempt: tok.Attempt, Value: value, At: e.now()})
	if e.cfg.Bus != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := e.cfg.Bus.Publish(ctx, []notify.Hint{notify.ProgressNotice(p)}); err != nil {
			e.log.Debug("publishing progress failed; only this instance's watchers saw it", "err", err)
		}
	}
	return nil
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
