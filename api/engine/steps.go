package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
)

// LeaseStatus answers started and heartbeat.
type LeaseStatus struct {
	ExpiresAt time.Time `json:"expires_at" doc:"The lease now expires then."`
}

// lease reads the lease an id names.
func (e *Engine) lease(ctx context.Context, id string) (leaseToken, *leaseRecord, blob.Version, error) {
	tok, err := parseLeaseID(id)
	if err != nil {
		return tok, nil, "", &InvalidError{Field: "lease", Message: "malformed lease id"}
	}
	l, ver, err := readJSON[leaseRecord](ctx, e.store, e.keys.lease(tok.Run, tok.Step, tok.Attempt))
	if isNotFound(err) {
		return tok, nil, "", &NotFoundError{What: "lease", ID: id}
	}
	if err != nil {
		return tok, nil, "", err
	}
	if l.Worker != tok.Worker {
		return tok, nil, "", &NotFoundError{What: "lease", ID: id}
	}
	return tok, l, ver, nil
}

// updateLease applies change to a lease by compare-and-swap, re-reading
// after a lost race. check runs on every read and may refuse.
func (e *Engine) updateLease(ctx context.Context, id string, check func(tok leaseToken, l *leaseRecord) (write bool, err error), change func(l *leaseRecord)) (*leaseRecord, error) {
	for attempt := 0; ; attempt++ {
		tok, l, ver, err := e.lease(ctx, id)
		if err != nil {
			return nil, err
		}
		write, err := check(tok, l)
		if err != nil || !write {
			return l, err
		}
		change(l)
		_, err = e.store.Swap(ctx, e.keys.lease(tok.Run, tok.Step, tok.Attempt), mustJSON(l), ver)
		if err == nil {
			return l, nil
		}
		if attempt > 20 || !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) {
			return nil, unavailable(err)
		}
		if blob.IsRetryable(err) {
			sleepJitter(ctx, attempt)
		}
	}
}

// Started records that the body of a lease is about to run. For an
// at_most_once step it is durable (a lost lease that had started fails
// the step instead of re-running it) and checks the run is still running;
// for at_least_once it only checks that the lease was not reclaimed.
func (e *Engine) Started(ctx context.Context, id string) (*LeaseStatus, error) {
	l, err := e.updateLease(ctx, id, func(tok leaseToken, l *leaseRecord) (bool, error) {
		if l.State != leaseActive {
			return false, reject(cairn.ReasonFenced, "lease of attempt %d of step %s was reclaimed after it expired", l.Attempt, l.Step)
		}
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
	return &LeaseStatus{ExpiresAt: l.ExpiresAt}, nil
}

// checkCurrent refuses a call about an attempt that is no longer the
// step's current one, or about a run that ended.
func (e *Engine) checkCurrent(r *runRecord, tok leaseToken) error {
	st := r.Steps[tok.Step]
	if st == nil {
		return reject(cairn.ReasonFenced, "run %s has no step %s", r.ID, tok.Step)
	}
	if a := findAttempt(st, tok.Attempt); a != nil && (a.Outcome == "completed" || a.Outcome == "failed") {
		return reject(cairn.ReasonAlreadyApplied, "attempt %d of step %s already ended (%s)", tok.Attempt, tok.Step, a.Outcome)
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

// Heartbeat extends a lease by the lease TTL.
func (e *Engine) Heartbeat(ctx context.Context, id string) (*LeaseStatus, error) {
	l, err := e.updateLease(ctx, id, func(tok leaseToken, l *leaseRecord) (bool, error) {
		if l.State != leaseActive {
			return false, reject(cairn.ReasonFenced, "lease of attempt %d of step %s was reclaimed after it expired", l.Attempt, l.Step)
		}
		r, err := e.readRun(ctx, l.Run)
		if err != nil {
			return false, err
		}
		return true, e.checkCurrent(r, tok)
	}, func(l *leaseRecord) {
		l.ExpiresAt = e.now().Add(e.cfg.LeaseTTL)
	})
	if err != nil {
		return nil, err
	}
	return &LeaseStatus{ExpiresAt: l.ExpiresAt}, nil
}

// CompleteRequest ends a step with its output.
type CompleteRequest struct {
	Output     json.RawMessage            `json:"output,omitempty" doc:"The step's output, any JSON."`
	StatePatch map[string]json.RawMessage `json:"state_patch,omitempty" doc:"Merged into the run state: top-level keys replace."`
	Usage      *cairn.Usage               `json:"usage,omitempty" doc:"What the attempt consumed; tokens are priced by the engine's price book."`
}

// FailRequest ends an attempt with an error.
type FailRequest struct {
	Error      cairn.ErrorInfo            `json:"error" doc:"class decides retry: retryable, fatal, unservable, or a typed class."`
	StatePatch map[string]json.RawMessage `json:"state_patch,omitempty" doc:"Merged into the run state even on failure."`
	Usage      *cairn.Usage               `json:"usage,omitempty"`
}

// Ended answers complete and fail.
type Ended struct {
	RunStatus cairn.RunStatus `json:"run_status" doc:"The run's status after this call."`
}

// Complete ends a step with its output.
func (e *Engine) Complete(ctx context.Context, id string, req CompleteRequest) (*Ended, error) {
	if len(req.Output) == 0 {
		req.Output = json.RawMessage("null")
	}
	if err := e.checkSizes(req.Output, req.StatePatch); err != nil {
		return nil, err
	}
	return e.end(ctx, id, req.StatePatch, req.Usage, func(r *runRecord, d *definition, tok leaseToken, startedAt *time.Time, fx *effects) {
		st := r.Steps[tok.Step]
		st.Status = cairn.StepCompleted
		st.Output = req.Output
		st.CompletedBy = tok.Attempt
		r.journal(fx.now, cairn.JournalEntry{Type: "step_completed", Step: tok.Step, Attempt: tok.Attempt, Worker: tok.Worker})
		e.advance(r, d, fx)
	}, "completed")
}

// Fail ends an attempt with an error; its class decides what follows.
func (e *Engine) Fail(ctx context.Context, id string, req FailRequest) (*Ended, error) {
	if req.Error.Class == "" {
		return nil, cairn.ValidationError{{Field: "error.class", Message: "required"}}
	}
	if len(req.Error.Message) > 16<<10 {
		req.Error.Message = req.Error.Message[:16<<10] + "…"
	}
	if err := e.checkSizes(nil, req.StatePatch); err != nil {
		return nil, err
	}
	why := req.Error
	return e.end(ctx, id, req.StatePatch, req.Usage, func(r *runRecord, d *definition, tok leaseToken, startedAt *time.Time, fx *effects) {
		e.failAttempt(r, d, tok.Step, tok.Attempt, why, tok.Worker, fx)
	}, "failed")
}

func (e *Engine) checkSizes(output json.RawMessage, patch map[string]json.RawMessage) error {
	if len(output) > e.cfg.MaxOutputBytes {
		return cairn.ValidationError{{Field: "output", Message: fmt.Sprintf("%d bytes, over the %d-byte limit", len(output), e.cfg.MaxOutputBytes)}}
	}
	n := 0
	for k, v := range patch {
		if len(v) == 0 || !json.Valid(v) {
			return cairn.ValidationError{{Field: "state_patch." + k, Message: "not valid JSON"}}
		}
		n += len(k) + len(v)
	}
	if n > e.cfg.MaxOutputBytes {
		return cairn.ValidationError{{Field: "state_patch", Message: fmt.Sprintf("%d bytes, over the %d-byte limit", n, e.cfg.MaxOutputBytes)}}
	}
	return nil
}

// end is complete and fail: check the lease is current, record the
// attempt, merge state and usage, then apply the outcome.
func (e *Engine) end(ctx context.Context, id string, patch map[string]json.RawMessage, usage *cairn.Usage,
	apply func(r *runRecord, d *definition, tok leaseToken, startedAt *time.Time, fx *effects), outcome string) (*Ended, error) {
	tok, err := parseLeaseID(id)
	if err != nil {
		return nil, &InvalidError{Field: "lease", Message: "malformed lease id"}
	}
	d, err := e.definition(ctx, tok.Workflow, tok.Version)
	if err != nil {
		return nil, err
	}
	s := d.Step(tok.Step)
	if s == nil {
		return nil, &NotFoundError{What: "lease", ID: id}
	}
	// at_most_once needs proof that started arrived: it lives in the lease.
	var startedAt *time.Time
	if s.EffectiveDelivery() == cairn.AtMostOnce {
		_, l, _, err := e.lease(ctx, id)
		if err != nil {
			return nil, err
		}
		startedAt = l.StartedAt
	}
	var u cairn.Usage
	if usage != nil {
		u = e.cfg.Prices.price(*usage)
	}
	val, err := e.commits.apply(ctx, tok.Run, func(r *runRecord, fx *effects) (any, error) {
		if err := e.checkCurrent(r, tok); err != nil {
			return nil, err
		}
		if s.EffectiveDelivery() == cairn.AtMostOnce && startedAt == nil {
			return nil, reject(cairn.ReasonNotStarted, "%s of at_most_once attempt %d of step %s arrived without started; an SDK worker never does this", outcome, tok.Attempt, tok.Step)
		}
		st := r.Steps[tok.Step]
		claimed := tok.claimedAt()
		ended := fx.now
		a := st.attempt(tok.Attempt)
		a.Worker, a.ClaimedAt, a.StartedAt, a.EndedAt, a.Outcome = tok.Worker, &claimed, startedAt, &ended, outcome
		r.journal(claimed, cairn.JournalEntry{Type: "step_claimed", Step: tok.Step, Attempt: tok.Attempt, Worker: tok.Worker})
		if !u.IsZero() {
			uc := u
			a.Usage = &uc
			st.Usage.Add(u)
			r.Usage.Add(u)
		}
		for k, v := range patch {
			if r.State == nil {
				r.State = map[string]json.RawMessage{}
			}
			r.State[k] = v
		}
		apply(r, d, tok, startedAt, fx)
		if a.Outcome == "failed" {
			a.Error = r.Steps[tok.Step].Error
			if a.Error == nil {
				for i := len(r.Journal) - 1; i >= 0; i-- {
					if j := r.Journal[i]; j.Step == tok.Step && j.Attempt == tok.Attempt && j.Error != nil {
						a.Error = j.Error
						break
					}
				}
			}
		}
		return &Ended{RunStatus: r.Status}, nil
	})
	if err != nil {
		return nil, err
	}
	return val.(*Ended), nil
}

// HeartbeatResult is one lease's answer in a batched heartbeat.
type HeartbeatResult struct {
	Lease     string     `json:"lease"`
	ExpiresAt *time.Time `json:"expires_at,omitempty" doc:"Set when the lease was extended."`
	Reason    string     `json:"reason,omitempty" enum:"already_applied,fenced,run_terminal,not_started," doc:"Set when the heartbeat was refused: cancel that body."`
	Error     string     `json:"error,omitempty" doc:"Set when the heartbeat failed for another reason (retry it)."`
}

// HeartbeatMany extends several leases in one call, each as Heartbeat
// would; one lease's refusal does not affect the others.
func (e *Engine) HeartbeatMany(ctx context.Context, ids []string) []HeartbeatResult {
	out := make([]HeartbeatResult, len(ids))
	for i, id := range ids {
		out[i].Lease = id
		s, err := e.Heartbeat(ctx, id)
		switch reason, ok := IsRejection(err); {
		case err == nil:
			t := s.ExpiresAt
			out[i].ExpiresAt = &t
		case ok:
			out[i].Reason = reason
		default:
			out[i].Error = err.Error()
		}
	}
	return out
}
