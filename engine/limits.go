package engine

import (
	"context"
	"errors"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/flow"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/notify"
)

// Flow control at claim time (docs/ARCHITECTURE.md, "Flow control"): the
// mechanism is engine/internal/flow; here the engine applies it to a
// claim, and decides when a slot's attempt is over (holderStale).

// acquireFlow applies a step's flow control to a claim about to create
// lease l: the rate limit, then every concurrency limit, recording the
// slots taken in l.Slots. It returns ok when the claim may create the
// lease; otherwise back (when not nil) is the hint to put back, delayed
// until the attempt may be claimable. A key that does not render fails the
// step (render_error) and returns neither.
func (e *Engine) acquireFlow(ctx context.Context, r *runRecord, d *definition, step string, l *leaseRecord, vars render.Vars, h notify.Hint) (ok bool, back *notify.Hint, err error) {
	sf := d.flow.Steps[step]
	if sf == nil || len(sf.Limits) == 0 && sf.Rate == nil {
		return true, nil, nil
	}
	ok, l.Slots, back, err = e.flow.Acquire(ctx, sf, flow.Claim{Step: step, Vars: vars, At: l.ClaimedAt, Hint: h,
		Holder: flow.Holder{Run: r.ID, Step: step, Attempt: l.Attempt, Tag: flow.Tag(l.Nonce), Worker: l.Worker, Workflow: r.Workflow, Version: r.Version},
		Claimed: func(ctx context.Context) (bool, error) {
			_, err := e.store.Stat(ctx, e.keys.LeaseOf(r.Layout, r.ID, step, l.Attempt))
			if isNotFound(err) {
				return false, nil
			}
			return err == nil, err
		},
		GiveBack: func(taken []string) { l.Slots = taken; e.releaseSlots(ctx, l) },
	})
	var re *flow.RenderError
	if errors.As(err, &re) {
		e.failRender(ctx, r.ID, d, step, l.Attempt, re.Err)
		return false, nil, nil
	}
	return ok, back, err
}

// holderStale decides whether a slot's attempt is over. Its lease:
//   - belongs to another claim (other nonce), or is fenced: stale;
//   - is active past its expiry and the recovery window, or past its
//     timeout: fenced here as the reaper would (the reaper then applies
//     the loss to the run), stale;
//   - does not exist and the slot is older than slotGrace (its claimer
//     died between the slot write and the lease write): a tombstone lease,
//     already expired, is created for the attempt, so the claimer's late
//     create can never land; the reaper then re-queues the attempt as
//     lost. Stale.
//
// A live lease (active, not expired) is never stale: its slot frees when
// the attempt ends.
func (e *Engine) holderStale(ctx context.Context, h flow.Holder) (bool, error) {
	for range 3 {
		now := e.now()
		l, ver, key, err := e.readLeaseAt(ctx, h.Run, h.Step, h.Attempt)
		if l != nil {
			l.Key = key
		}
		if isNotFound(err) {
			if now.Sub(h.At) < flow.SlotGrace {
				return false, nil
			}
			key, kerr := e.leaseKeyOfRun(ctx, h.Run, h.Step, h.Attempt)
			if kerr != nil {
				return false, kerr
			}
			tomb := leaseRecord{Run: h.Run, Step: h.Step, Attempt: h.Attempt, Worker: h.Worker, Workflow: h.Workflow, Version: h.Version,
				Delivery: cairn.AtLeastOnce, State: leaseExpired, ExpiredWhy: "expired", ClaimedAt: h.At, ExpiresAt: h.At, Nonce: keys.NewNonce()}
			_, err := e.store.Create(ctx, key, object.JSON(tomb))
			if err == nil {
				e.log.Info("concurrency slot recovered: its claim died before writing the lease", "run", h.Run, "step", h.Step, "attempt", h.Attempt)
				e.recoverNow(ctx, &tomb)
				return true, nil
			}
			if errors.Is(err, blob.ErrPreconditionFailed) {
				continue // the lease appeared: look at it
			}
			return false, err
		}
		if err != nil {
			return false, err
		}
		if flow.Tag(l.Nonce) != h.Tag || l.State != leaseActive {
			return true, nil
		}
		why, _ := l.Verdict(now, e.cfg.RecoveryWindow) // as the reaper decides (reaper.go)
		if why == "" {
			return false, nil
		}
		err = e.leases.Fence(ctx, l, ver, why)
		if errors.Is(err, blob.ErrPreconditionFailed) {
			continue // a heartbeat won, or someone fenced it: look again
		}
		if err == nil {
			e.recoverNow(ctx, l)
		}
		return err == nil, err
	}
	return false, nil
}

// recoverNow applies a lease this claim fenced to its run, as the
// reaper's next visit would (which stays the fallback when this fails):
// the attempt is re-queued or failed at once rather than at the run's
// next routine visit. Then it frees the lease's slots under its other
// keys.
func (e *Engine) recoverNow(ctx context.Context, l *leaseRecord) {
	d, err := e.definition(ctx, l.Workflow, l.Rev())
	if err == nil {
		err = e.recoverAttempt(ctx, l.Run, d, l, l.ExpiredWhy, &ReapStats{})
	}
	if err != nil && !errs.IsNotFound(err) {
		e.log.Warn("applying a fenced lease to its run failed; the reaper will", "run", l.Run, "step", l.Step, "attempt", l.Attempt, "err", err)
		return
	}
	e.releaseSlots(ctx, l)
}

// releaseSlots removes lease l's attempt from every limit object it holds
// a slot in, and wakes the claims of this instance parked on those keys.
// Safe to call more than once, and for leases that hold no slot.
func (e *Engine) releaseSlots(ctx context.Context, l *leaseRecord) {
	if l == nil || len(l.Slots) == 0 {
		return
	}
	e.flow.ReleaseAll(ctx, l.Slots, func(h flow.Holder) bool { return h.Is(l.Run, l.Step, l.Attempt, l.Nonce) }, func(err error) {
		// The slot is recovered when a claim finds the key full and the
		// lease ended (holderStale).
		e.log.Warn("releasing a concurrency slot failed; it is recovered once the lease is seen ended", "run", l.Run, "step", l.Step, "attempt", l.Attempt, "err", err)
	}, e.hub.Add)
}

// attemptEnded frees the slots of a lease whose complete or fail was
// answered: applied, or refused because the attempt was already over.
func (e *Engine) attemptEnded(ctx context.Context, l *leaseRecord, err error) {
	if l == nil || len(l.Slots) == 0 {
		return
	}
	if err != nil {
		reason, ok := IsRejection(err)
		if !ok || reason != cairn.ReasonAlreadyApplied && reason != cairn.ReasonFenced && reason != cairn.ReasonRunTerminal {
			return // the attempt goes on (or the store failed: nothing known)
		}
	}
	e.releaseSlots(ctx, l)
}

// leaseKeyOfRun is where a lease of run is created: in the run's key
// layout (layout.go), from the cached record or, failing that, a read. A
// run that is gone answers the engine's own layout.
func (e *Engine) leaseKeyOfRun(ctx context.Context, run, step string, attempt int) (string, error) {
	r := e.sharedRun(run, 0) // read only
	if r == nil {
		var err error
		if r, err = e.readRun(ctx, run); isNotFound(err) || errs.IsNotFound(err) {
			return e.keys.Lease(run, step, attempt), nil
		} else if err != nil {
			return "", err
		}
	}
	return e.keys.LeaseOf(r.Layout, r.ID, step, attempt), nil
}

// singleton takes a workflow's singleton key for run id, a start of req
// (flow.Table.Singleton): with mode skip, a running holder is answered
// instead (skipped); with cancel_running, it is cancelled first.
func (e *Engine) singleton(ctx context.Context, req cairn.StartRequest, d *definition, id string) (*cairn.StartResult, error) {
	return e.flow.Singleton(ctx, d.flow.Singleton, render.Vars{Input: req.Input, RunID: id, Workflow: d.Name, Version: d.Version, Correlation: req.Correlation}, id,
		flow.SingletonHost{State: e.runState, GetRun: e.GetRun, Cancel: e.CancelRun})
}
