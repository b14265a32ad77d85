package engine

import (
	"context"
	"errors"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// Deferred completes: on a store that takes about one write per second
// per object (GCS), the completions of a wide fan-out queue behind the run
// record however well group commit folds them, and a worker waits ~2 s per
// step with its slot idle. While the run record is congested (a write to
// it was throttled in the last commit.CongestedFor, and a batch is in
// flight), a
// complete is made durable in its own lease object instead — a
// compare-and-swap of the lease from active to completed, carrying the
// output, state patch and priced usage — and answered at once (run_status
// running); the committer folds it into the run record in the next batch.
//
// The lease swap is the decision: the reaper's fence is a swap of the same
// object against the same version, so exactly one of "completed" and
// "expired" lands, as between a complete and a fence today. A completed
// lease is folded (the same mutation a complete applies: the attempt must
// still be current) by the goroutine the complete started, and by anyone
// who finds it later: a worker call on the lease (answered already_applied,
// or the run's refusal when the run ended first), and the reaper's visit
// of the ready step (an instance that died between the swap and the fold).
// A complete that cannot be decided on the instance's cached run record
// (none, not current, near the size limit, an at_most_once attempt without
// started) takes the ordinary path, so its refusals are what they were.

// completeDeferred makes a complete durable in its lease and answers it
// before the fold, when the run record is congested. ok is false when the
// complete should take the ordinary path.
func (e *Engine) completeDeferred(ctx context.Context, tok leaseToken, req cairn.CompleteRequest) (_ *cairn.Ended, ok bool, _ error) {
	if !e.commits.Congested(tok.Run) {
		return nil, false, nil
	}
	r := e.sharedRun(tok.Run, 0) // read only
	if r == nil {
		return nil, false, nil
	}
	raw, cver, _ := e.commits.Cache().Get(tok.Run)
	// The cached copy may be older than the stored record: another
	// instance may have applied this very lease's end (the worker's
	// earlier complete, whose answer was lost, retried here). Deciding on
	// the stale copy would answer the retry ok for an end the record
	// already holds, where the protocol says already_applied (the chaos
	// suite's lease history caught it). One HEAD confirms the copy is the
	// stored one; a newer record is read (and cached) instead.
	if o, err := e.store.Stat(ctx, e.keys.RunOf(r.Layout, r.ID)); err != nil || o.Version != cver {
		fresh, o, err := e.runs.Get(ctx, tok.Run)
		if err != nil {
			return nil, false, nil // the ordinary path reads and reports it
		}
		e.commits.Cache().Offer(tok.Run, o.Data, o.Version, fresh)
		r, raw = fresh, o.Data
	}
	size := len(req.Output)
	for k, v := range req.StatePatch {
		size += len(k) + len(v)
	}
	if len(raw)+size+(64<<10) > e.cfg.MaxRunRecordBytes {
		return nil, false, nil // may be too large: decided by the record
	}
	tok, l, ver, err := e.workerCall(ctx, tok, nil)
	if err != nil {
		return nil, true, err
	}
	if l.Inline || l.Delivery == cairn.AtMostOnce && l.StartedAt == nil {
		return nil, false, nil // an inline lease has no object to swap (inline.go)
	}
	if r.Workflow != l.Workflow || r.Version != l.Version || e.checkCurrent(r, tok) != nil {
		return nil, false, nil
	}
	if d, err := e.definition(ctx, l.Workflow, l.Rev()); err != nil || d.Step(l.Step) == nil || d.CheckPatch(req.StatePatch, e.cfg.PayloadInlineMax) != nil {
		return nil, false, nil // the ordinary path refuses what it must
	}
	// Values over the inline limit go by reference first (payloads.go), so
	// the lease and the record it is folded into hold only references.
	if err := e.externalizeEnd(ctx, tok.Run, &req.Output, req.StatePatch); err != nil {
		return nil, true, err
	}
	done := &leaseDone{Output: req.Output, StatePatch: req.StatePatch, Summary: req.Summary, At: e.now()}
	if req.Usage != nil {
		u := e.cfg.Prices.Price(*req.Usage)
		done.Usage = &u
	}
	c := *l
	c.State, c.Done = leaseCompleted, done
	_, err = e.store.Swap(ctx, l.KeyIn(e.keys), object.JSON(&c), ver)
	e.leases.Forget(tok.Run, tok.Step, tok.Attempt)
	switch {
	case errors.Is(err, blob.ErrPreconditionFailed):
		return nil, false, nil // the lease changed (a fence): the ordinary path reads it
	case err != nil:
		return nil, true, errs.Unavailable(err)
	}
	go func() {
		fctx, cancel := context.WithTimeout(context.Background(), e.cfg.CommitTimeout)
		defer cancel()
		if _, err := e.fold(fctx, tok, &c); err != nil {
			if _, rejected := IsRejection(err); !rejected {
				e.log.Warn("folding a deferred complete failed; the reaper's visit of the step folds it", "run", tok.Run, "step", tok.Step, "err", err)
			}
		}
	}()
	return &cairn.Ended{RunStatus: cairn.RunRunning}, true, nil
}

// fold applies a completed lease's outcome to the run record, as its
// complete would have; a rejection says the attempt is no longer current
// (already applied, or the run ended first).
func (e *Engine) fold(ctx context.Context, tok leaseToken, l *leaseRecord) (_ *cairn.Ended, ferr error) {
	defer func() { e.attemptEnded(ctx, l, ferr) }() // free its concurrency slots (limits.go)
	d, err := e.definition(ctx, l.Workflow, l.Rev())
	if err != nil {
		return nil, err
	}
	var u cairn.Usage
	if l.Done.Usage != nil {
		u = *l.Done.Usage // priced when deferred
	}
	done := &ending{output: &l.Done.Output, patch: l.Done.StatePatch, usage: u, summary: l.Done.Summary}
	ended, err := mutate(ctx, e.commits, l.Run, e.endMutation(d, tok, l, done))
	if reason, ok := IsRejection(err); ok && reason == cairn.ReasonTooLarge {
		// Checked against the size limit before deferring, but the record
		// grew meanwhile: fail the step as a worker told too_large does.
		why := cairn.ErrorInfo{Class: cairn.ClassOutputTooLarge, Message: "the deferred output would grow the run record past its limit"}
		return mutate(ctx, e.commits, l.Run, e.endMutation(d, tok, l, &ending{why: &why, usage: u}))
	}
	return ended, err
}

// foldAnswer answers a worker call on a completed lease: fold it (a no-op
// when it was folded), then already_applied, or the refusal of the run
// record when the run moved on first.
func (e *Engine) foldAnswer(ctx context.Context, tok leaseToken, l *leaseRecord) error {
	_, err := e.fold(ctx, leaseTokenOf(l, tok), l)
	if err == nil {
		return reject(cairn.ReasonAlreadyApplied, "attempt %d of step %s already ended (completed)", tok.Attempt, tok.Step)
	}
	return err
}

// leaseTokenOf is tok with the lease's own fields (a token the lease
// matched).
func leaseTokenOf(l *leaseRecord, tok leaseToken) leaseToken {
	tok.Run, tok.Step, tok.Attempt, tok.Worker = l.Run, l.Step, l.Attempt, l.Worker
	return tok
}
