package engine

import (
	"context"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/notify"
)

// watchers is one instance's registry of status requests waiting for a
// run to change (GetRunStatus with a wait). The committer signals it after
// each write on this instance, and run-change notices from the bus
// (notify.Hint with Changed) signal it for writes on other instances, so a
// waiting request answers within milliseconds of a change and reads the
// bucket only when told of one, plus a slow fallback read in case a
// notice was lost.
type watchers struct {
	mu   sync.Mutex
	runs map[string]*runWatch
}

// runWatch is the waiting requests of one run.
type runWatch struct {
	n int // requests registered
	// heard is the newest revision this instance was told of while
	// someone waited; next is closed (and replaced) when it grows.
	heard int64
	next  chan struct{}

	// readMu makes the requests woken by one change share one read.
	readMu sync.Mutex
	latest *runRecord // the newest record read for them (shared, read-only)
}

func newWatchers() *watchers { return &watchers{runs: map[string]*runWatch{}} }

// add registers a waiting request on run; call the returned stop when it
// answers.
func (ws *watchers) add(run string) (*runWatch, func()) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.runs[run]
	if w == nil {
		w = &runWatch{next: make(chan struct{})}
		ws.runs[run] = w
	}
	w.n++
	return w, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if w.n--; w.n == 0 {
			delete(ws.runs, run)
		}
	}
}

// changed says run's record now has revision rev. Runs nobody waits on
// cost a map lookup.
func (ws *watchers) changed(run string, rev int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.runs[run]; w != nil && rev > w.heard {
		w.heard = rev
		close(w.next)
		w.next = make(chan struct{})
	}
}

// state returns the newest revision heard of and a channel closed when a
// newer one is.
func (ws *watchers) state(w *runWatch) (int64, <-chan struct{}) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return w.heard, w.next
}

// waiting is the number of status requests waiting on run.
func (ws *watchers) waiting(run string) int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.runs[run]; w != nil {
		return w.n
	}
	return 0
}

// receive handles a notification from the bus: run-change notices wake
// status requests, everything else goes to the hub of claims.
func (e *Engine) receive(h notify.Hint) {
	if h.Registered != "" {
		e.latest.forget(h.Registered)
		return
	}
	if h.Changed {
		e.watch.changed(h.Run, h.Rev)
		return
	}
	e.hub.Add(h)
}

// runAtLeast returns run's record for a request woken by a change to
// revision rev: from the committer's cache when it has it (a change
// committed here), else from one read shared by every request of this
// instance woken by that change.
func (e *Engine) runAtLeast(ctx context.Context, w *runWatch, run string, rev int64) (*runRecord, error) {
	if r := e.cachedRun(run, rev); r != nil {
		return r, nil
	}
	w.readMu.Lock()
	defer w.readMu.Unlock()
	if w.latest != nil && w.latest.Rev >= rev {
		return w.latest, nil
	}
	r, err := e.readRun(ctx, run)
	if err != nil {
		return nil, err
	}
	if w.latest == nil || r.Rev > w.latest.Rev {
		w.latest = r
	}
	return r, nil
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
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, err
	}
	r, err := e.watchRun(ctx, id, after, false, wait)
	if err != nil {
		return nil, err
	}
	return e.status(ctx, r), nil
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
	d, err := e.definition(ctx, r.Workflow, r.Version)
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
	deadline := e.holdUntil(ctx, wait)
	if !untilEnd {
		if r := e.cachedRun(id, after+1); r != nil {
			return r, nil
		}
	} else if r := e.cachedRun(id, 0); r != nil && r.Status.Terminal() {
		return r, nil // ended is final: any copy that says so is current
	}
	// Registered before the first read: a change committed after it is
	// signalled, a change before it is in the read.
	w, stop := e.watch.add(id)
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
		heard, next := e.watch.state(w)
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
