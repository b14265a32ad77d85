package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/mapstep"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/notify"
)

// The run state machine. Every function here changes a run record in
// memory, inside a mutation; the committer writes the result.
//
//	step:  pending → ready (task) → completed | failed
//	              ↘ waiting (wait) → completed | failed (timeout)
//	              ↘ sleeping (sleep) → completed
//	              ↘ skipped (when false, or every dependency skipped)
//	              ↘ failed (its when condition could not be evaluated)
//	       any non-done step → cancelled when the run ends first
//	run:   running → completed | failed | cancelled | timed_out; running ⇄ paused

func (r *runRecord) journal(now time.Time, e cairn.JournalEntry) {
	if mapstep.DroppedJournal(e) {
		return // see mapstep.go
	}
	e.At = now
	r.Journal = append(r.Journal, e)
}

// advance starts every pending step whose dependencies are settled
// (completed or skipped; what a start does is its kind's: see stepKinds),
// skipping those whose when condition is false or whose dependencies were
// all skipped, and completes the run when every step is settled. Wait
// steps that find their event already received complete at once, which
// may start more steps: advance repeats until nothing changes.
func (e *Engine) advance(r *runRecord, d *definition, fx *effects) {
	if r.Status == cairn.RunPaused {
		return // its resume advances it (pause.go)
	}
	for changed := true; changed && !r.Status.Terminal(); {
		changed = false
		steps := advanceSteps(r, d) // compensate.go
		for i := range steps {
			st := r.Steps[steps[i].ID]
			if r.Status.Terminal() || st.Status != cairn.StepPending || !depsSettled(r, &steps[i]) {
				continue
			}
			s := steps[i] // a copy only of the steps that start: a fan-out's complete visits them all
			changed = true
			if why := e.skipReason(r, d, &s, fx); why != "" {
				st.Status = cairn.StepSkipped
				r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepSkipped, Step: s.ID, Message: why})
				continue
			}
			if st.Status == cairn.StepPending {
				kindOf(&s).start(e, r, d, &s, fx)
			}
		}
	}
	if r.Status.Terminal() {
		return
	}
	if r.compensating() {
		e.compensationDone(r, fx)
		return
	}
	for _, st := range r.Steps {
		if !st.Status.Settled() {
			return
		}
	}
	r.Output = runOutput(r, d)
	e.endRun(r, cairn.RunCompleted, nil, fx.now, "")
}

func depsSettled(r *runRecord, s *cairn.Step) bool {
	for _, a := range s.After {
		if !r.Steps[a].Status.Settled() {
			return false
		}
	}
	return true
}

// skipReason decides whether a step whose dependencies are settled is
// skipped: every dependency was skipped (skip propagation: the branch it
// belongs to was not taken), or its when condition is false. A condition
// that cannot be evaluated (an error, or not a bool) fails the step and
// the run, as a template that does not render fails its attempt; the step
// is then no longer pending.
func (e *Engine) skipReason(r *runRecord, d *definition, s *cairn.Step, fx *effects) string {
	if len(s.After) > 0 {
		all := true
		for _, a := range s.After {
			if r.Steps[a].Status != cairn.StepSkipped {
				all = false
				break
			}
		}
		if all {
			return "every step it runs after was skipped"
		}
	}
	t := d.whens[s.ID]
	if t == nil {
		return ""
	}
	ok, err := t.Bool(e.renderVarsFor(r, d, s.ID))
	switch {
	case err == nil && ok:
		return ""
	case err == nil:
		return "when condition is false: " + render.Clip(s.When)
	}
	why := cairn.ErrorInfo{Class: cairn.ClassRenderError, Message: fmt.Sprintf("when condition of step %s: %v", s.ID, err)}
	e.failStepAndRun(r, s.ID, why, cairn.JournalEntry{}, fx)
	return ""
}

// renderVarsFor is what a step's expressions see: the run's input, state
// and identity, and the outputs of its completed ancestors.
func (e *Engine) renderVarsFor(r *runRecord, d *definition, step string) render.Vars {
	outputs, visits := map[string]json.RawMessage{}, map[string]int{}
	for _, a := range d.ancestors[step] {
		if as := r.Steps[a]; as != nil && as.Status == cairn.StepCompleted {
			outputs[a], visits[a] = as.Output, as.visits()
		}
	}
	var visit int
	if st := r.Steps[step]; st != nil {
		visit = st.Loops + 1
	}
	return render.Vars{Input: r.Input, State: r.State, Steps: outputs, Visits: visits, Visit: visit, RunID: r.ID,
		Workflow: r.Workflow, Version: r.Version, Correlation: r.Correlation, Resolve: e.resolver(nil, r.ID)}
}

func eventIndex(evs []eventRecord, name string) int {
	for i, ev := range evs {
		if ev.Name == name {
			return i
		}
	}
	return -1
}

// runOutput is the output of the run's only sink step (null when it was
// skipped), or an object of every completed sink's output by step id.
func runOutput(r *runRecord, d *definition) json.RawMessage {
	sinks := d.Sinks()
	if len(sinks) == 1 {
		if out := r.Steps[sinks[0]].Output; len(out) > 0 {
			return out
		}
		return json.RawMessage("null") // the only sink was skipped
	}
	m := map[string]json.RawMessage{}
	for _, s := range sinks {
		if st := r.Steps[s]; st.Status == cairn.StepCompleted {
			m[s] = st.Output
		}
	}
	return object.JSON(m)
}

// scheduleAttempt makes a new attempt of a task step claimable at at.
func (e *Engine) scheduleAttempt(r *runRecord, d *definition, step string, at time.Time, fx *effects) {
	st := r.Steps[step]
	st.Attempt++
	st.Status = cairn.StepReady
	t := at
	st.ReadyAt = &t
	fx.hints = append(fx.hints, notify.Hint{Run: r.ID, Workflow: r.Workflow, Version: r.Version, Step: step, Attempt: st.Attempt, NotBefore: notBefore(at, fx.now), Priority: stepPriority(r, d, step)})
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepReady, Step: step, Attempt: st.Attempt})
}

func notBefore(at, now time.Time) time.Time {
	if at.After(now) {
		return at
	}
	return time.Time{}
}

// endRun ends a running run: status, error, and every step that has not
// finished is cancelled.
func (e *Engine) endRun(r *runRecord, status cairn.RunStatus, why *cairn.ErrorInfo, now time.Time, message string) {
	if r.Status.Terminal() {
		return
	}
	if e.compensateInstead(r, status, why, now) { // compensate.go
		return
	}
	if c := r.Compensation; c != nil && c.Failure != nil && (status == cairn.RunFailed || status == cairn.RunCompleted) {
		// The compensation ended: the run fails with what started it.
		status, why, message = cairn.RunFailed, c.Failure, "compensation "+string(c.Status)
	}
	r.Status = status
	r.Error = why
	t := now
	r.EndedAt = &t
	for _, st := range r.Steps {
		if !st.Status.Done() {
			st.Status = cairn.StepCancelled
			st.WakeAt = nil
		}
	}
	r.journal(now, cairn.JournalEntry{Type: cairn.JournalRunEnded(status), Error: why, Message: message})
}

// failStepAndRun fails step with why and the run with it: the one way a
// step's failure ends its run (a task's last attempt or a started
// at_most_once one, a when condition that does not render, a wait's
// timeout, a failed child or map). entry is the step_failed journal
// entry's attempt, worker and message, when there are any.
func (e *Engine) failStepAndRun(r *runRecord, step string, why cairn.ErrorInfo, entry cairn.JournalEntry, fx *effects) {
	st := r.Steps[step]
	st.Status, st.Error, st.WakeAt = cairn.StepFailed, &why, nil
	entry.Type, entry.Step, entry.Error = cairn.JournalStepFailed, step, &why
	r.journal(fx.now, entry)
	runErr := why
	runErr.Step = step
	e.endRun(r, cairn.RunFailed, &runErr, fx.now, "step "+step+" failed")
}

// failAttempt applies the failure of attempt n of a task step: retry,
// requeue (unservable) or fail the step and the run. The caller checked
// that n is the step's current attempt. started says the attempt's
// started was recorded: a started at_most_once attempt is never offered
// again, whatever the class, unless the retry policy lists the class in
// retry_after_start.
func (e *Engine) failAttempt(r *runRecord, d *definition, step string, n int, why cairn.ErrorInfo, worker string, started bool, fx *effects) {
	st := r.Steps[step]
	s := d.Step(step)
	policy := s.Retry.WithDefaults()
	why.Step = ""
	if started && s.EffectiveDelivery() == cairn.AtMostOnce && !slices.Contains(policy.RetryAfterStart, why.Class) {
		if _, _, item := keys.SplitItem(step); item {
			e.itemFailed(r, d, step, n, worker, why, fx)
			return
		}
		e.failStepAndRun(r, step, why, cairn.JournalEntry{Attempt: n, Worker: worker,
			Message: "at_most_once attempt had started: not run again"}, fx)
		return
	}
	switch {
	case why.Class == cairn.ClassUnservable:
		if st.Avoid == nil {
			st.Avoid = map[string]time.Time{}
		}
		// Forget stale avoidances so the map stays small.
		for w, until := range st.Avoid {
			if until.Before(fx.now) {
				delete(st.Avoid, w)
			}
		}
		if worker != "" {
			st.Avoid[worker] = fx.now.Add(e.cfg.UnservableAvoid)
		}
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepRequeued, Step: step, Attempt: n, Worker: worker, Error: &why, Message: "worker does not serve this step; no retry budget spent"})
		e.scheduleAttempt(r, d, step, fx.now, fx)
		return
	case policy.Retries(why.Class) && st.Failures+1 < policy.MaxAttempts:
		st.Failures++
		at := fx.now.Add(policy.Backoff(st.Failures))
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepRetryScheduled, Step: step, Attempt: n, Worker: worker, Error: &why,
			Message: "retry at " + at.Format(time.RFC3339Nano)})
		e.scheduleAttempt(r, d, step, at, fx)
		return
	}
	if policy.Retries(why.Class) {
		st.Failures++
	}
	if _, _, item := keys.SplitItem(step); item {
		e.itemFailed(r, d, step, n, worker, why, fx)
		return
	}
	e.failStepAndRun(r, step, why, cairn.JournalEntry{Attempt: n, Worker: worker}, fx)
}

// checkDeadline times the run out when its deadline has passed (a paused
// run's at its resume: pause.go).
func (e *Engine) checkDeadline(r *runRecord, now time.Time) bool {
	if r.Status != cairn.RunRunning || r.Deadline == nil || now.Before(*r.Deadline) {
		return false
	}
	e.endRun(r, cairn.RunTimedOut, &cairn.ErrorInfo{Class: cairn.ClassTimeout, Message: "run deadline " + r.Deadline.Format(time.RFC3339) + " passed"}, now, "")
	return true
}
