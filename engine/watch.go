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

// receive handles a notification from the bus: run-change notices wake
// status requests, everything else goes to the hub of claims.
func (e *Engine) receive(h notify.Hint) {
	switch h.Kind() {
	case notify.KindRegistered:
		e.defs.Forget(h.Registered)
	case notify.KindChanged:
		// The copy goes before the holds are told, so a hold that starts
		// between the two finds no stale copy to start from (watch.Hold).
		e.runs.Heard(h.Run, h.Rev)
		e.watch.Changed(h.Run, h.Rev)
	case notify.KindProgress:
		e.progress.Deliver(*h.Progress)
	default:
		e.hub.Add(h)
	}
}

// GetRunStatus returns a run's progress. With wait > 0 it holds until the
// run's rev exceeds after (or the run ends), up to wait capped at the
// claim hold. A held request reads the run record once when it starts
// (not when this instance wrote or read it within the last second and
// heard of no change since: recentCopy), then only when this instance
// commits a change to the run or hears of one on the bus (one read shared
// by the instance's waiting requests, none when the change was committed
// here), and at FallbackInterval in case a notice was lost. A record
// cached by this instance's committer newer than after answers unread.
func (e *Engine) GetRunStatus(ctx context.Context, id string, after int64, wait time.Duration) (*cairn.RunProgress, error) {
	s, _, err := e.RunStream(ctx, id, after, wait) // progress.go
	return s, err
}

// AwaitRun is GetRun held until the run ends, up to wait capped at the
// claim hold: what a client waiting for a run's outcome asks, in one
// request however many times the run changes meanwhile. It costs what a
// held status request costs (one read when it starts, none for a run just
// started or changed here; none per change committed on this instance),
// and answers from the record in hand (a run still running when the hold
// ends: as GetRun). recorded: the ending commit, made here, put the read
// (who, op) in that record (engine/internal/audit); else the caller audits it.
func (e *Engine) AwaitRun(ctx context.Context, id string, wait time.Duration, who, op string) (_ *cairn.Run, recorded bool, err error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, false, err
	}
	held := e.audit.Hold(id, who, op)
	defer e.audit.Release(held)
	r := &runRecord{} // wait 0: not held (an ending commit meanwhile at worst records it too)
	if wait > 0 {
		if r, err = e.watchRun(ctx, id, 0, true, wait); err != nil {
			return nil, false, err
		}
	}
	if !r.Status.Terminal() { // no hold, or it ended first: the full view, holders read
		v, err := e.GetRun(ctx, id)
		return v, false, err
	}
	d, err := e.definition(ctx, r.Workflow, r.rev())
	if err != nil {
		d = nil // the view works without the definition
	}
	v := e.view(r, d)
	if err := e.resolveView(ctx, v, d); err != nil {
		return nil, false, err
	}
	return v, e.audit.Recorded(held, r.Rev), nil
}

// HeldReads is how many reads wait for their run's end here (AwaitRun): a test signal.
func (e *Engine) HeldReads() int { return e.audit.Held() }

// watchRun returns run's record once its rev exceeds after (any change,
// unless untilEnd: only its end counts) or the run ended, holding up to
// wait (none: one read), shared as holdRun's. See GetRunStatus for what a
// hold reads.
func (e *Engine) watchRun(ctx context.Context, id string, after int64, untilEnd bool, wait time.Duration) (*runRecord, error) {
	if wait <= 0 {
		return e.readRun(ctx, id)
	}
	if !untilEnd {
		if r := e.sharedRun(id, after+1); r != nil {
			return r, nil
		}
	} else if r := e.sharedRun(id, 0); r != nil && r.Status.Terminal() {
		return r, nil // ended is final: any copy that says so is current
	}
	return e.holdRun(ctx, id, wait, func(r *runRecord) bool { return r.Status.Terminal() || !untilEnd && r.Rev > after })
}

// holdRun returns run's record once answers holds of it, holding up to
// wait capped at the claim hold (watch.Hold). The record may be shared
// (the committer's decoded copy, or one read for every request a change
// woke): callers read it and change nothing in it.
func (e *Engine) holdRun(ctx context.Context, id string, wait time.Duration, answers func(*runRecord) bool) (*runRecord, error) {
	return watch.Hold[runRecord]{
		Run: id, Fallback: e.cfg.FallbackInterval, Deadline: hold.Until(ctx, wait, e.MaxClaimHold()), Done: e.draining,
		Rev:     func(r *runRecord) int64 { return r.Rev },
		Answers: answers,
		Read:    func(ctx context.Context) (*runRecord, error) { return e.readRun(ctx, id) },
		Cached:  func(rev int64) *runRecord { return e.sharedRun(id, rev) },
		Recent:  func() *runRecord { return e.runs.Recent(id, recentCopy) },
	}.Wait(ctx, e.watch)
}

// recentCopy is how recent a copy of a run this instance wrote or read
// must be for a held request to start from it instead of a read (watch.Hold):
// a client that waits on the run it just started, or on the update it just
// sent, reads nothing. A change made on another instance in that second
// that this instance did not hear of is found by the hold's fallback read,
// the bound for any change made elsewhere while it holds (docs/DECISIONS.md 5.6).
const recentCopy = time.Second
