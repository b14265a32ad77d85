package engine

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/attrs"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// lease reads the lease an id names and checks that the id is a real
// one: the lease object exists and its worker, claim time and nonce match
// the id's. Anything else is "lease not found": a made-up or edited id
// learns nothing.
func (e *Engine) lease(ctx context.Context, tok leaseToken) (leaseToken, *leaseRecord, blob.Version, error) {
	if l, ver, ok := e.leases.Cached(tok); ok {
		return tok, l, ver, nil // written by this instance: see engine/internal/lease
	}
	l, ver, key, err := e.readLeaseAt(ctx, tok.Run, tok.Step, tok.Attempt)
	if l != nil {
		l.Key = key
	}
	if isNotFound(err) {
		// No object: the lease may live in the run record (inline.go).
		il, err := e.inlineLeaseOf(ctx, tok)
		if err != nil {
			return tok, nil, "", err
		}
		if il != nil {
			return tok, il, inlineVersion, nil
		}
		return tok, nil, "", &NotFoundError{What: "lease", ID: shortID(tok.Raw)}
	}
	if err != nil {
		return tok, nil, "", err
	}
	if !l.Matches(tok) {
		return tok, nil, "", &NotFoundError{What: "lease", ID: shortID(tok.Raw)}
	}
	return tok, l, ver, nil
}

// shortID keeps error messages small: lease ids are long and opaque.
func shortID(id string) string {
	if len(id) > 16 {
		return id[:16] + "…"
	}
	return id
}

// refuseFenced answers a worker call about a fenced lease. The engine's
// decision about the attempt (lost, timed out) is committed to the run
// record first, if the fencer has not done it yet: the run record is where
// an attempt's outcome is decided, and a worker told "fenced" must never
// see its attempt completed afterwards. The answer is then read off the
// run record: already_applied when this lease's own complete or fail won,
// else fenced (or run_terminal).
func (e *Engine) refuseFenced(ctx context.Context, tok leaseToken, l *leaseRecord) error {
	d, err := e.definition(ctx, l.Workflow, l.Rev())
	if err != nil {
		return err
	}
	why := l.ExpiredWhy
	if why == "" {
		why = "expired"
	}
	// The refusal is the mutation's value, not its error: the mutation
	// changed the record (recoverMutation), and that change must commit.
	refusal, err := mutate(ctx, e.commits, l.Run, func(r *runRecord, fx *effects) (refusal, err error) {
		e.recoverMutation(r, d, l, why, fx)
		return e.checkCurrent(r, tok), nil
	})
	if err != nil {
		return err
	}
	e.releaseSlots(ctx, l) // the attempt is over (limits.go)
	if refusal != nil {
		return refusal
	}
	return reject(cairn.ReasonFenced, "lease of attempt %d of step %s was reclaimed (%s)", l.Attempt, l.Step, why)
}

// workerCall reads a lease for a worker call and refuses it when the
// engine has taken the attempt back: fenced by the reaper, or past its
// timeout_at or lapsed (then fenced here, and the outcome recorded). lateFail, when
// not nil, is called instead of fencing a lease past timeout_at: a fail
// that arrives then (a body that gave up at its deadline) is applied as
// the timeout it is, keeping the worker's words.
func (e *Engine) workerCall(ctx context.Context, tok leaseToken, lateFail func()) (leaseToken, *leaseRecord, blob.Version, error) {
	for attempt := 0; ; attempt++ {
		tok, l, ver, err := e.lease(ctx, tok)
		if err != nil {
			return tok, nil, "", err
		}
		why := ""
		switch {
		case l.State != leaseActive:
		case l.TimedOut(e.now()):
			why = "timeout"
		case l.Lapsed(e.now(), e.cfg.RecoveryWindow):
			why = "expired"
		}
		if why != "" {
			if why == "timeout" && lateFail != nil {
				lateFail()
				return tok, l, ver, nil
			}
			err := e.leases.Fence(ctx, l, ver, why)
			if errors.Is(err, blob.ErrPreconditionFailed) && attempt < 20 {
				continue // the lease changed: look again
			}
			if err != nil {
				return tok, nil, "", errs.Unavailable(err)
			}
		}
		if l.State == leaseCompleted {
			return tok, nil, "", e.foldAnswer(ctx, tok, l) // see deferred.go
		}
		if l.State != leaseActive {
			return tok, nil, "", e.refuseFenced(ctx, tok, l)
		}
		return tok, l, ver, nil
	}
}

// updateLease applies change to a live lease by compare-and-swap,
// re-reading after a lost race. check runs on every read and may refuse.
func (e *Engine) updateLease(ctx context.Context, tok leaseToken, check func(tok leaseToken, l *leaseRecord) (write bool, err error), change func(l *leaseRecord)) (*leaseRecord, error) {
	for attempt := 0; ; attempt++ {
		tok, l, ver, err := e.workerCall(ctx, tok, nil)
		if err != nil {
			return nil, err
		}
		write, err := check(tok, l)
		if err != nil || !write {
			return l, err
		}
		change(l)
		nv, err := e.leases.Write(ctx, l, ver) // an inline lease's first write creates its object (inline.go)
		if err == nil {
			e.leases.Remember(l, nv)
			return l, nil
		}
		e.leases.Forget(tok.Run, tok.Step, tok.Attempt) // the next look reads it
		if attempt > 20 || !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) {
			return nil, errs.Unavailable(err)
		}
		if blob.IsRetryable(err) {
			throttle.Jitter(ctx, attempt)
		}
	}
}

// Started records that the body of a lease is about to run. For an
// at_most_once step it is durable (from then on the step is never offered
// again) and checks the run is still running; for at_least_once it only
// checks that the lease is live.
func (e *Engine) Started(ctx context.Context, id string) (*cairn.LeaseStatus, error) {
	tok, err := leaseArg(id)
	if err != nil {
		return nil, err
	}
	l, err := e.updateLease(ctx, tok, func(tok leaseToken, l *leaseRecord) (bool, error) {
		if l.Delivery != cairn.AtMostOnce || l.StartedAt != nil {
			return false, nil
		}
		r, err := e.readRun(ctx, l.Run)
		if err != nil {
			return false, err
		}
		if err := e.checkCurrent(r, tok); err != nil {
			return false, err
		}
		return true, nil
	}, func(l *leaseRecord) {
		now := e.now()
		l.StartedAt = &now
	})
	if err != nil {
		return nil, err
	}
	return &cairn.LeaseStatus{ExpiresAt: l.ExpiresAt}, nil
}

// checkCurrent refuses a call about an attempt that is no longer the
// step's current one, or about a run that ended. already_applied is
// answered only when this attempt's own complete or fail was applied (one
// lease per attempt: the attempt's outcome is the lease's); an attempt the
// engine ended (timed out, lost) is fenced.
func (e *Engine) checkCurrent(r *runRecord, tok leaseToken) error {
	st := r.Steps[tok.Step]
	if st == nil {
		return reject(cairn.ReasonFenced, "run %s has no step %s", r.ID, tok.Step)
	}
	if a := findAttempt(st, tok.Attempt); a != nil && a.EndedAt != nil {
		if a.Outcome == cairn.OutcomeCompleted || a.Outcome == cairn.OutcomeFailed {
			return reject(cairn.ReasonAlreadyApplied, "attempt %d of step %s already ended (%s)", tok.Attempt, tok.Step, a.Outcome)
		}
		return reject(cairn.ReasonFenced, "attempt %d of step %s was ended by the engine (%s)", tok.Attempt, tok.Step, a.Outcome)
	}
	if r.Status.Terminal() {
		return reject(cairn.ReasonRunTerminal, "run %s has ended (%s)", r.ID, r.Status)
	}
	if st.Attempt != tok.Attempt || st.Status != cairn.StepReady {
		return reject(cairn.ReasonFenced, "attempt %d of step %s is not current (current attempt %d, step %s)", tok.Attempt, tok.Step, st.Attempt, st.Status)
	}
	return nil
}

func findAttempt(st *stepState, n int) *cairn.Attempt {
	for i := range st.Attempts {
		if st.Attempts[i].N == n {
			return &st.Attempts[i]
		}
	}
	return nil
}

// Heartbeat extends a lease by the lease TTL. It is refused once the
// attempt is over: completed, reclaimed, past its timeout, or its run
// ended.
func (e *Engine) Heartbeat(ctx context.Context, id string) (*cairn.LeaseStatus, error) {
	tok, err := leaseArg(id)
	if err != nil {
		return nil, err
	}
	return e.heartbeat(ctx, tok, newRunMemo(ctx, e))
}

// heartbeat is Heartbeat with the run record read through runs, started
// before the lease is read, so the two reads overlap and a batch reads
// each run once.
func (e *Engine) heartbeat(ctx context.Context, tok leaseToken, runs *runMemo) (*cairn.LeaseStatus, error) {
	runs.Start(tok.Run)
	l, err := e.updateLease(ctx, tok, func(tok leaseToken, l *leaseRecord) (bool, error) {
		r, err := runs.Get(ctx, l.Run)
		if err != nil {
			return false, err
		}
		return true, e.checkCurrent(r, tok)
	}, func(l *leaseRecord) {
		l.ExpiresAt = e.now().Add(e.cfg.LeaseTTL)
		if l.TimeoutAt != nil && l.ExpiresAt.After(*l.TimeoutAt) {
			// The attempt ends at its timeout whatever the heartbeats say.
			l.ExpiresAt = *l.TimeoutAt
		}
	})
	if err != nil {
		return nil, err
	}
	e.seen(l.Worker)
	return &cairn.LeaseStatus{ExpiresAt: l.ExpiresAt}, nil
}

// Complete ends a step with its output.
func (e *Engine) Complete(ctx context.Context, id string, req cairn.CompleteRequest) (*cairn.Ended, error) {
	if req.ContinueAsNew != nil {
		return e.continueAsNew(ctx, id, req) // function.go
	}
	if len(req.Output) == 0 {
		req.Output = json.RawMessage("null")
	}
	if err := cairn.CheckSizes(req.Output, req.StatePatch, e.cfg.MaxOutputBytes); err != nil {
		return nil, err
	}
	if err := attrs.Check(req.Attributes, "attributes"); err != nil {
		return nil, err
	}
	if err := cairn.CheckSummary(req.Summary); err != nil {
		return nil, err
	}
	if n := req.ClaimNext; n != nil && (n.Max < 1 || n.Max > 100) {
		return nil, &InvalidError{Field: "claim_next.max", Message: "must be between 1 and 100"}
	}
	tok, err := leaseArg(id)
	if err != nil {
		return nil, err
	}
	var next *inlineClaim
	if req.ClaimNext != nil {
		next = e.inlineClaimFor(ctx, tok, req.ClaimNext.Max)
	}
	ended, err := e.complete(ctx, tok, req, next)
	if err != nil || req.ClaimNext == nil {
		return ended, err
	}
	// The complete's own write leased the attempts it made ready to this
	// worker (inline.go), when it could.
	var leases []cairn.Lease
	if next != nil {
		leases = e.answerGranted(next.granted)
		e.seen(tok.Worker)
	}
	if len(leases) >= req.ClaimNext.Max {
		ended.Leases = leases
		return ended, nil
	}
	// The complete landed, so the lease id was proven: its worker is the
	// one to claim for. The claim never holds. A failure here must not
	// turn the applied complete into an error: the worker claims again.
	more, cerr := e.Claim(ctx, cairn.ClaimRequest{WorkerID: tok.Worker, Max: req.ClaimNext.Max - len(leases)})
	if cerr != nil && len(more) == 0 {
		e.log.Warn("eager claim after complete failed; the worker claims again", "worker", tok.Worker, "err", cerr)
	}
	ended.Leases = append(leases, more...)
	return ended, nil
}

func (e *Engine) complete(ctx context.Context, tok leaseToken, req cairn.CompleteRequest, next *inlineClaim) (*cairn.Ended, error) {
	if len(req.Attributes) == 0 { // attributes are indexed with the record: never deferred
		if ended, ok, err := e.completeDeferred(ctx, tok, req); ok {
			return ended, err // the run record is congested: see deferred.go
		}
	}
	en := e.completing(&req.Output, req.StatePatch, req.Usage, req.Summary)
	en.attrs = req.Attributes
	en.next = next
	return e.end(ctx, tok, en)
}

// ending is how a worker ends an attempt: completing it with an output,
// or failing it with an error. A deferred complete is folded through the
// same (deferred.go).
type ending struct {
	output *json.RawMessage           // completing: the output
	why    *cairn.ErrorInfo           // failing: the error
	patch  map[string]json.RawMessage // the state patch
	usage  cairn.Usage                // priced
	// summary is the worker's summary of the attempt, recorded on it.
	summary json.RawMessage
	// continued is the run a function's run continued as (function.go).
	continued string
	// interrupt is an interrupt's payload (interrupt.go).
	interrupt *json.RawMessage
	// attrs sets search attributes (a complete's).
	attrs map[string]json.RawMessage
	// next, when not nil, asks for inline leases on what this complete
	// makes ready (a complete with claim_next: inline.go).
	next *inlineClaim
}

// completing is the ending of a complete.
func (e *Engine) completing(output *json.RawMessage, patch map[string]json.RawMessage, usage *cairn.Usage, summary json.RawMessage) *ending {
	return &ending{output: output, patch: patch, usage: e.priced(usage), summary: summary}
}

// failing is the ending of a fail.
func (e *Engine) failing(why cairn.ErrorInfo, patch map[string]json.RawMessage, usage *cairn.Usage, summary json.RawMessage) *ending {
	return &ending{why: &why, patch: patch, usage: e.priced(usage), summary: summary}
}

func (e *Engine) priced(u *cairn.Usage) cairn.Usage {
	if u == nil {
		return cairn.Usage{}
	}
	return e.cfg.Prices.Price(*u)
}

func (en *ending) outcome() cairn.AttemptOutcome {
	if en.why != nil {
		return cairn.OutcomeFailed
	}
	if en.interrupt != nil {
		return cairn.OutcomeInterrupted
	}
	return cairn.OutcomeCompleted
}

// unstartedOK: a worker that does not serve a step never starts its body,
// so an unservable fail of an at_most_once attempt needs no started.
func (en *ending) unstartedOK() bool {
	return en.why != nil && en.why.Class == cairn.ClassUnservable
}

// late turns a fail that arrives past the attempt's timeout_at (a body
// that gave up at its deadline) into the timeout it is, keeping the
// worker's words. A complete has none: past timeout_at it is fenced.
func (en *ending) late() func() {
	if en.why == nil {
		return nil
	}
	return func() {
		if en.why.Class != cairn.ClassTimeout {
			en.why.Message = "reported as " + en.why.Class + " after the attempt's timeout: " + en.why.Message
			en.why.Class = cairn.ClassTimeout
		}
	}
}

// apply is what the ending does to the run record once its lease and
// attempt are checked.
func (e *Engine) apply(en *ending, r *runRecord, d *definition, tok leaseToken, started bool, fx *effects) {
	if en.why != nil {
		e.failAttempt(r, d, tok.Step, tok.Attempt, *en.why, tok.Worker, started, fx)
		return
	}
	if en.interrupt != nil {
		interrupted(r, tok, *en.interrupt, fx) // interrupt.go
		return
	}
	if _, _, item := keys.SplitItem(tok.Step); item {
		e.itemCompleted(r, d, tok.Step, *en.output, fx) // mapstep.go
		return
	}
	st := r.Steps[tok.Step]
	st.Status = cairn.StepCompleted
	st.Output = *en.output
	st.CompletedBy = tok.Attempt
	if st.CacheKey != "" {
		e.cacheOutput(r, tok.Step, tok.Attempt, st, fx) // resultcache.go
	}
	if en.continued != "" {
		r.ContinuedAs = en.continued
	}
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepCompleted, Step: tok.Step, Attempt: tok.Attempt, Worker: tok.Worker})
	e.loopBack(r, d, tok.Step, fx) // loop.go
	e.advance(r, d, fx)
}

// addUsage records u, an attempt's priced usage, on the attempt, its step
// and the run.
func addUsage(r *runRecord, st *stepState, a *cairn.Attempt, u cairn.Usage) {
	if !u.IsZero() {
		uc := u
		a.Usage = &uc
		st.Usage.Add(u)
		r.Usage.Add(u)
	}
}

// checkBudget fails a running run whose usage, just recorded for step,
// went over its budget.
func (e *Engine) checkBudget(r *runRecord, step string, now time.Time) {
	if over := r.Budget.Exceeded(r.Usage); over != "" {
		e.endRun(r, cairn.RunFailed, &cairn.ErrorInfo{Class: cairn.ClassBudgetExceeded, Message: over, Step: step}, now, "budget exceeded")
	}
}

// Fail ends an attempt with an error; its class decides what follows.
func (e *Engine) Fail(ctx context.Context, id string, req cairn.FailRequest) (*cairn.Ended, error) {
	if req.Error.Class == "" {
		return nil, cairn.ValidationError{{Field: "error.class", Message: "required"}}
	}
	if len(req.Error.Message) > 16<<10 {
		req.Error.Message = req.Error.Message[:16<<10] + "…"
	}
	if err := cairn.CheckSizes(nil, req.StatePatch, e.cfg.MaxOutputBytes); err != nil {
		return nil, err
	}
	if err := cairn.CheckSummary(req.Summary); err != nil {
		return nil, err
	}
	tok, err := leaseArg(id)
	if err != nil {
		return nil, err
	}
	return e.end(ctx, tok, e.failing(req.Error, req.StatePatch, req.Usage, req.Summary))
}

// end is complete and fail: prove the lease, check it is current, record
// the attempt, merge state and usage, then apply the outcome. The
// workflow, version and delivery come from the lease object, which the
// engine wrote at claim; the run record must agree.
//
// output, when not nil, is the complete's output: it and the state patch
// are stored by reference (payloads.go) once the lease is proven, before
// the run-record write.
func (e *Engine) end(ctx context.Context, tok leaseToken, en *ending) (*cairn.Ended, error) {
	tok, l, _, err := e.workerCall(ctx, tok, en.late())
	if err != nil {
		return nil, err
	}
	// Whatever the run record decides, this lease's worker calls are over
	// (a retry after a store failure reads the lease again).
	defer e.leases.Forget(tok.Run, tok.Step, tok.Attempt)
	d, err := e.definition(ctx, l.Workflow, l.Rev())
	if err != nil {
		return nil, err
	}
	if d.Step(l.Step) == nil {
		return nil, &NotFoundError{What: "lease", ID: shortID(tok.Raw)}
	}
	if err := d.CheckPatch(en.patch, e.cfg.PayloadInlineMax); err != nil {
		return nil, err
	}
	if err := e.externalizeEnd(ctx, tok.Run, en.output, en.patch); err != nil {
		return nil, err
	}
	ended, err := e.mutateSpilling(ctx, tok.Run, en.output, en.patch, e.endMutation(d, tok, l, en))
	e.attemptEnded(ctx, l, err) // free its concurrency slots (limits.go)
	return ended, err
}

// endMutation is the run-record change of ending en of lease l: check the
// attempt is current, record it, merge state and usage, apply the ending.
func (e *Engine) endMutation(d *definition, tok leaseToken, l *leaseRecord, en *ending) mutationOf[*cairn.Ended] {
	startedAt, outcome, u := l.StartedAt, en.outcome(), en.usage
	return func(r *runRecord, fx *effects) (*cairn.Ended, error) {
		if r.Workflow != l.Workflow || r.Version != l.Version {
			return nil, reject(cairn.ReasonFenced, "lease does not belong to run %s", r.ID)
		}
		if err := itemEnded(r, tok); err != nil { // mapstep.go
			return nil, err
		}
		if err := e.checkCurrent(r, tok); err != nil {
			return nil, err
		}
		if l.Delivery == cairn.AtMostOnce && startedAt == nil && !en.unstartedOK() {
			return nil, reject(cairn.ReasonNotStarted, "%s of at_most_once attempt %d of step %s arrived without started; an SDK worker never does this", outcome, tok.Attempt, tok.Step)
		}
		if err := e.setAttrs(r, en.attrs, fx); err != nil {
			return nil, err
		}
		st := r.Steps[tok.Step]
		claimed := l.ClaimedAt
		ended := fx.now
		a := st.attempt(tok.Attempt)
		a.Worker, a.ClaimedAt, a.StartedAt, a.EndedAt, a.Outcome, a.Summary = l.Worker, &claimed, startedAt, &ended, outcome, en.summary
		r.journal(claimed, cairn.JournalEntry{Type: cairn.JournalStepClaimed, Step: tok.Step, Attempt: tok.Attempt, Worker: l.Worker})
		addUsage(r, st, a, u)
		for k, v := range en.patch {
			if r.State == nil {
				r.State = map[string]json.RawMessage{}
			}
			r.State[k] = d.Fold(k, r.State[k], v) // state.go: the key's reducer
		}
		hints := len(fx.hints)
		e.apply(en, r, d, tok, startedAt != nil, fx)
		e.checkBudget(r, tok.Step, fx.now)
		if en.next != nil {
			e.grantInline(r, d, en.next, hints, fx) // inline.go
		}
		if a.Outcome == cairn.OutcomeFailed {
			if st := r.Steps[tok.Step]; st != nil { // a finished map item is gone
				a.Error = st.Error
			}
			if a.Error == nil {
				for i := len(r.Journal) - 1; i >= 0; i-- {
					if j := r.Journal[i]; j.Step == tok.Step && j.Attempt == tok.Attempt && j.Error != nil {
						a.Error = j.Error
						break
					}
				}
			}
		}
		return &cairn.Ended{RunStatus: r.Status}, nil
	}
}

// heartbeatParallel bounds how many leases of one batched heartbeat are
// renewed at once (a batch holds at most 100): each renewal is two
// overlapping reads and a write, so a batch takes about as long as its
// slowest renewal, not the sum of them.
const heartbeatParallel = 100

// HeartbeatMany extends several leases in one call, each as Heartbeat
// would, concurrently (at most heartbeatParallel at a time); one lease's
// refusal does not affect the others. A lease that failed for another
// reason says only that it should be retried: store errors and keys stay
// in the server's log.
func (e *Engine) HeartbeatMany(ctx context.Context, ids []string) []cairn.HeartbeatResult {
	out := make([]cairn.HeartbeatResult, len(ids))
	runs := newRunMemo(ctx, e)
	par.Each(heartbeatParallel, len(ids), func(i int) {
		id := ids[i]
		out[i].Lease = id
		defer func() {
			if p := recover(); p != nil {
				e.log.Error("heartbeat panicked", "panic", p, "stack", string(debug.Stack()))
				out[i].Error = "internal error; retry"
			}
		}()
		tok, err := leaseArg(id)
		var s *cairn.LeaseStatus
		if err == nil {
			s, err = e.heartbeat(ctx, tok, runs)
		}
		switch reason, ok := IsRejection(err); {
		case err == nil:
			t := s.ExpiresAt
			out[i].ExpiresAt = &t
		case ok:
			out[i].Reason = reason
		default:
			out[i].Error = errs.Public(err)
			if out[i].Error == "" {
				e.log.Warn("batched heartbeat: a lease failed", "err", err)
				out[i].Error = "the store is busy or failed; retry"
			}
		}
	})
	return out
}
