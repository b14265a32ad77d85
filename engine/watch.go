package engine

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/hold"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/watch"
	"github.com/cairn-dev/cairn/notify"
)

// Run watchers (engine/internal/watch): status requests waiting for a
// run to change (GetRunStatus with a wait, AwaitRun).
type runWatch = watch.Watch[runRecord]

// receive handles a notification from the bus: run-change notices wake
// status requests, everything else goes to the hub of claims.
func (e *Engine) receive(h notify.Hint) {
	switch h.Kind() {
	case notify.KindRegistered:
		e.defs.Forget(h.Registered)
	case notify.KindChanged:
		e.watch.Changed(h.Run, h.Rev)
	case notify.KindProgress:
		e.progress.Deliver(*h.Progress)
	default:
		e.hub.Add(h)
	}
}

// runAtLeast returns run's record for a request woken by a change to
// revision rev: from the committer's cache when it has it (a change
// committed here), else from one read shared by every request of this
// instance woken by that change.
func (e *Engine) runAtLeast(ctx context.Context, w *runWatch, run string, rev int64) (*runRecord, error) {
	if r := e.cachedRun(run, rev); r != nil {
		return r, nil
	}
	return w.AtLeast(rev, func() (*runRecord, int64, error) {
		r, err := e.readRun(ctx, run)
		if err != nil {
			return nil, 0, err
		}
		return r, r.Rev, nil
	})
}

// GetRunStatus returns a run's progress. With wait > 0 it holds until the
// run's rev exceeds after (or the run ends), up to wait capped at the
// claim hold. A held request reads the run record once when it starts,
// then only when this instance commits a change to the run or hears of
// one on the bus (one read shared by the instance's waiting requests, none
// when the change was committed here), and at FallbackInterval in case a
// notice was lost. A record cached by this instance's committer that is
// newer than after answers without a read.
func (e *Engine) GetRunStatus(ctx context.Context, id string, after int64, wait time.Duration) (*cairn.RunProgress, error) {
	s, _, err := e.RunStream(ctx, id, after, wait) // progress.go
	return s, err
}

// AwaitRun is GetRun held until the run ends, up to wait capped at the
// claim hold: what a client waiting for a run's outcome asks, in one
// request however many times the run changes meanwhile. It costs what a
// held status request costs (one read when it starts, none per change
// committed on this instance), and answers from the record in hand: the
// caller audits the answer once, as a GetRun's. A run still running when
// the hold ends is answered as GetRun answers it (with its holders).
func (e *Engine) AwaitRun(ctx context.Context, id string, wait time.Duration) (*cairn.Run, error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, err
	}
	if wait <= 0 {
		return e.GetRun(ctx, id)
	}
	r, err := e.watchRun(ctx, id, 0, true, wait)
	if err != nil {
		return nil, err
	}
	if !r.Status.Terminal() {
		return e.GetRun(ctx, id) // the hold ended first: the full view, holders read
	}
	d, err := e.definition(ctx, r.Workflow, r.rev())
	if err != nil {
		d = nil // the view works without the definition
	}
	return e.view(r, d), nil
}

// watchRun returns run's record once its rev exceeds after (any change,
// unless untilEnd: only its end counts) or the run ended, holding up to
// wait (none: one read). See GetRunStatus for what a hold reads.
func (e *Engine) watchRun(ctx context.Context, id string, after int64, untilEnd bool, wait time.Duration) (*runRecord, error) {
	if wait <= 0 {
		return e.readRun(ctx, id)
	}
	// answers reports whether r answers the request.
	answers := func(r *runRecord) bool {
		return r.Status.Terminal() || !untilEnd && r.Rev > after
	}
	deadline := hold.Until(ctx, wait, e.MaxClaimHold())
	if !untilEnd {
		if r := e.cachedRun(id, after+1); r != nil {
			return r, nil
		}
	} else if r := e.cachedRun(id, 0); r != nil && r.Status.Terminal() {
		return r, nil // ended is final: any copy that says so is current
	}
	// Registered before the first read: a change committed after it is
	// signalled, a change before it is in the read.
	w, stop := e.watch.Add(id)
	defer stop()
	r, err := e.readRun(ctx, id)
	if err != nil {
		return nil, err
	}
	consumed := r.Rev
	fallback := time.NewTimer(e.cfg.FallbackInterval)
	defer fallback.Stop()
	hold := time.NewTimer(time.Until(deadline))
	defer hold.Stop()
	for {
		if answers(r) || !time.Now().Before(deadline) {
			return r, nil
		}
		heard, next := e.watch.State(w)
		if heard > consumed {
			consumed = heard
			nr, err := e.runAtLeast(ctx, w, id, heard)
			if err != nil {
				return nil, err
			}
			if nr.Rev > r.Rev {
				r = nr
			}
			continue
		}
		select {
		case <-next:
		case <-fallback.C:
			nr, err := e.readRun(ctx, id)
			if err != nil {
				return nil, err
			}
			if nr.Rev > r.Rev {
				r = nr
			}
			consumed = max(consumed, r.Rev)
			fallback.Reset(e.cfg.FallbackInterval)
		case <-hold.C:
		case <-ctx.Done():
			return r, nil
		case <-e.draining:
			return r, nil
		}
	}
}
