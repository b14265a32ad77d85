package engine

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/handoff"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/lease"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/telemetry"
)

// Inline leases: one conditional write per step on the busy path.
//
// A complete that carries claim_next (eager dispatch) asks for the next
// work of its worker. When the commit that applies it makes an attempt
// ready that this worker may take — an at_least_once task step with no
// concurrency or rate limit and no result cache, not a map item nor a
// function step, ready now, matching the worker's labels, and not outranked
// by more urgent work this instance's hub holds for the worker — the same
// run-record write records that attempt's lease in the record
// (stepState.Lease) and the complete answers it. No
// lease object is written: a linear step costs the one compare-and-swap of
// the record.
//
// The invariant that makes it safe: an attempt whose lease is inline is
// ready only in record versions that carry that lease, because it became
// ready in the very commit that recorded it (and no hint is published for
// it). A claimer, deciding on any copy of the record however stale, finds
// the lease there and never creates a lease object for the attempt
// (claimOne); the fallback scan and a run-scoped claim do not offer it.
//
// From then on the lease object is written only where it is needed, and
// create-only, so the record's lease and any object can never both be
// live for two holders:
//   - the first heartbeat creates the object from the record's lease
//     with its new expiry (updateLease); later heartbeats swap it as
//     before, and every reader finds the object first;
//   - the reaper, and a worker call finding the lease lapsed or timed out,
//     fence an inline lease by creating its object already expired (a
//     tombstone, as limits.go does for a slot whose claimer died): a
//     heartbeat's create and the fence's create race on one key and
//     exactly one lands, as their swaps do on an object;
//   - a complete or fail changes no lease: the run record decides it
//     (checkCurrent), as for any lease; a deferred complete (deferred.go)
//     needs an object to swap, so an inline lease takes the ordinary path.
//
// A lease is proven as always: the object when there is one, else the
// record's lease, whose nonce the id must match.

// InlineKeptInputBytes is the largest rendered input an inline lease
// keeps for StepInput (a lease object keeps up to KeptInputBytes).
const InlineKeptInputBytes = lease.InlineKeptInputBytes

// inlineVersion is the version the lease cache holds for an inline lease
// (lease.InlineVersion).
const inlineVersion = lease.InlineVersion

// liveInline returns the step's inline lease when it holds the step's
// current attempt, else nil.
func (st *stepState) liveInline() *inlineLease {
	if st == nil || st.Lease == nil || st.Status != cairn.StepReady || st.Lease.Attempt != st.Attempt {
		return nil
	}
	return st.Lease
}

// inlineRecord is the lease record of step's inline lease il in r, as its
// object would hold it.
func (e *Engine) inlineRecord(r *runRecord, step string, il *inlineLease) *leaseRecord {
	tp := func(step string, n int) string { return telemetry.StepTraceParent(r.ID, r.Trace, step, n) }
	return lease.FromInline(lease.Run{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Def: r.Def, TraceParent: tp}, step, il, e.keys.LeaseOf(r.Layout, r.ID, step, il.Attempt))
}

// inlineLeaseOf proves tok against the inline lease of its attempt in the
// run record, when no lease object was found: the committer's copy when
// it holds the lease, else a fresh read. Any copy that holds the lease
// with the id's nonce proves the id (the nonce is the capability); what
// is current is decided by the writes that follow, as for an object.
func (e *Engine) inlineLeaseOf(ctx context.Context, tok leaseToken) (*leaseRecord, error) {
	find := func(r *runRecord) *leaseRecord {
		if r == nil {
			return nil
		}
		st := r.Steps[tok.Step]
		if st == nil || st.Lease == nil || st.Lease.Attempt != tok.Attempt {
			return nil
		}
		l := e.inlineRecord(r, tok.Step, st.Lease)
		if !l.Matches(tok) {
			return nil
		}
		return l
	}
	if l := find(e.sharedRun(tok.Run, 0)); l != nil {
		return l, nil
	}
	r, err := e.readRun(ctx, tok.Run)
	if err != nil {
		if isNotFound(err) || errs.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return find(r), nil
}

// inlineClaim is a complete's request for an inline lease (claim_next):
// the worker to lease to and how many, and, once the commit landed, the
// leases granted.
type inlineClaim struct {
	w   cachedWorker
	max int
	// above, when outranked, is the highest effective priority of the
	// work this instance's hub holds for the worker: a claim would take
	// that first, so an attempt of lower priority is not leased inline.
	above     int64
	outranked bool
	granted   []inlineGrant
}

// inlineGrant is one lease an inline claim was granted.
type inlineGrant struct {
	lease cairn.Lease
	rec   *leaseRecord
}

// inlineClaimFor returns the inline claim of a complete of tok asking for
// max leases, or nil when none may be made (the instance drains, the
// worker is unknown).
func (e *Engine) inlineClaimFor(ctx context.Context, tok leaseToken, max int) *inlineClaim {
	select {
	case <-e.draining:
		return nil
	default:
	}
	w, err := e.worker(ctx, tok.Worker)
	if err != nil {
		return nil
	}
	return e.inlineClaimOf(w, max)
}

// inlineClaimOf is an inline claim of up to max leases for worker w.
func (e *Engine) inlineClaimOf(w cachedWorker, max int) *inlineClaim {
	ic := &inlineClaim{w: w, max: max}
	ic.above, ic.outranked = e.hub.Highest(func(h notify.Hint) bool {
		return w.Served[workflowID{Name: h.Workflow, Version: h.Version}]
	})
	return ic
}

// grantInline records, inside the mutation of a complete, inline leases
// for ic's worker on the attempts this mutation made ready: the hints
// fx.hints[from:], which it drops for the attempts it leases (nobody else
// is to be told of them). The simple case only: anything else is claimed
// as before.
func (e *Engine) grantInline(r *runRecord, d *definition, ic *inlineClaim, from int, fx *effects) {
	ic.granted = ic.granted[:0]
	if r.Status != cairn.RunRunning || !ic.w.Served[workflowID{Name: r.Workflow, Version: r.Version}] {
		return
	}
	for i := from; i < len(fx.hints) && len(ic.granted) < ic.max; i++ {
		h := fx.hints[i]
		if h.Run != r.ID || h.Taken || !h.NotBefore.IsZero() {
			continue
		}
		g, ok := e.inlineGrantOf(r, d, ic, h.Step, h.Attempt, fx.now)
		if !ok {
			continue
		}
		ic.granted = append(ic.granted, g)
		fx.hints = slices.Delete(fx.hints, i, i+1)
		i--
	}
}

// inlineGrantOf leases attempt n of step to worker w in r, when it is the
// simple case, and returns the lease to answer.
func (e *Engine) inlineGrantOf(r *runRecord, d *definition, ic *inlineClaim, step string, n int, now time.Time) (inlineGrant, bool) {
	w := ic.w
	st := r.Steps[step]
	s := d.Step(step)
	if st == nil || s == nil || st.Status != cairn.StepReady || st.Attempt != n || n == 0 {
		return inlineGrant{}, false
	}
	if _, _, item := keys.SplitItem(step); item || s.ID != step {
		return inlineGrant{}, false // a map item
	}
	if s.EffectiveKind() != cairn.KindTask || s.EffectiveDelivery() != cairn.AtLeastOnce || s.Cache != nil {
		return inlineGrant{}, false
	}
	if sf := d.flow.Steps[step]; sf != nil && (len(sf.Limits) > 0 || sf.Rate != nil) {
		return inlineGrant{}, false // flow control: slots and limits need the claim's path
	}
	if st.ReadyAt != nil && st.ReadyAt.After(now) || len(st.Ops) > 0 || st.Resume != nil || st.Interrupt != nil {
		return inlineGrant{}, false
	}
	if !st.offerableTo(w, s, now) {
		return inlineGrant{}, false
	}
	if ic.outranked && int64(stepPriority(r, d, step)) < ic.above {
		return inlineGrant{}, false // the worker's claim takes more urgent work first
	}
	t := d.templates[step]
	if t == nil {
		return inlineGrant{}, false
	}
	vars := e.renderVarsFor(r, d, step)
	input, err := t.Render(vars)
	if err != nil {
		return inlineGrant{}, false // a claim renders it again and decides
	}
	il := &inlineLease{Attempt: n, Worker: w.Rec.ID, ClaimedAt: now, ExpiresAt: now.Add(e.cfg.LeaseTTL), Nonce: keys.NewNonce(), InputBytes: len(input)}
	if len(input) <= InlineKeptInputBytes {
		il.Input = input
	}
	if s.Timeout > 0 {
		at := now.Add(s.Timeout.D())
		il.TimeoutAt = &at
	}
	st.Lease = il
	l := e.inlineRecord(r, step, il)
	// The state is copied (Answer): the record changes after this mutation.
	return inlineGrant{rec: l, lease: *l.Answer(step, input, maps.Clone(vars.Steps), r.State, r.Correlation, e.cfg.HeartbeatInterval, e.cfg.LeaseTTL)}, true
}

// inlineWake is when the reaper must look at st for its inline lease:
// its attempt's timeout (the claim's timer for a lease object).
func inlineWake(st *stepState) time.Time {
	if il := st.liveInline(); il != nil && il.TimeoutAt != nil {
		return *il.TimeoutAt
	}
	return time.Time{}
}

// inlineHolder is the live inline lease of attempt n of step in run (a
// status call's holders): the committer's copy when it is at least rev,
// else a read. nil when there is none.
func (e *Engine) inlineHolder(ctx context.Context, run, step string, n int, rev int64) (*leaseRecord, error) {
	r := e.sharedRun(run, rev)
	if r == nil {
		var err error
		if r, err = e.runs.ReadShared(ctx, run, rev); err != nil {
			if isNotFound(err) || errs.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
	}
	if il := r.Steps[step].liveInline(); il != nil && il.Attempt == n {
		return e.inlineRecord(r, step, il), nil
	}
	return nil, nil
}

// A start's eager dispatch (engine/internal/handoff): a held claim on
// this instance whose worker serves the new run is handed the run's first
// attempts, leased inline in the run's first record by grantInline's
// rules; the invariant holds as for a complete, since the create that
// makes those attempts ready carries their leases.

// heldClaim is what a held claim offers a start: its worker (its room is
// the taker's: how many leases it asked for).
type heldClaim struct{ w cachedWorker }

// handToHeldClaim offers the new run r's first attempts to a held claim
// with room, leasing them in r; the start settles the offer once its
// create is known.
func (e *Engine) handToHeldClaim(r *runRecord, d *definition, fx *effects) *handoff.Offered[heldClaim, inlineGrant] {
	if r.Status != cairn.RunRunning || len(fx.hints) == 0 {
		return nil
	}
	wf := workflowID{Name: r.Workflow, Version: r.Version}
	return e.handoff.Offer(func(c heldClaim) bool { return c.w.Served[wf] }, func(c heldClaim, room int) []inlineGrant {
		ic := e.inlineClaimOf(c.w, room)
		e.grantInline(r, d, ic, 0, fx)
		return ic.granted
	})
}

// answerGranted is the leases of inline grants, kept in the lease cache (at
// a version no store makes) so their calls on this instance read nothing.
func (e *Engine) answerGranted(gs []inlineGrant) []cairn.Lease {
	leases := make([]cairn.Lease, 0, len(gs))
	for _, g := range gs {
		e.leases.Remember(g.rec, inlineVersion)
		leases = append(leases, g.lease)
	}
	return leases
}
