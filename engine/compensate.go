package engine

import (
	"time"

	"github.com/cairn-dev/cairn"
)

// Compensation (a saga). A workflow's on_failure steps run when a run of
// it fails:
//
//	running ──a step fails──▶ running, compensating: the other steps are
//	   cancelled, the on_failure steps start (their templates see the
//	   failed run's input, state and completed steps' outputs)
//	compensating ──every on_failure step settled──▶ failed (compensation completed)
//	             ──an on_failure step failed──────▶ failed (compensation failed)
//	             ──cancel, deadline───────────────▶ cancelled / timed_out (compensation cancelled)
//
// The run's status stays running while it compensates, so its
// compensation steps are claimed, retried and recovered like any task;
// its final status is failed, with the error that started the
// compensation. The run record remembers at its start which steps
// compensate (compState.Steps), so endRun, which has no definition, can
// start the compensation.
type compState struct {
	Status cairn.CompensationStatus `json:"status,omitempty"` // "" until the run fails
	Steps  []string                 `json:"steps"`
	// Failure is the run's failure that started the compensation.
	Failure *cairn.ErrorInfo `json:"failure,omitempty"`
	Error   *cairn.ErrorInfo `json:"error,omitempty"`
}

// armCompensation records, at a run's start, the on_failure steps of its
// workflow.
func armCompensation(r *runRecord, d *definition) {
	if len(d.OnFailure) == 0 {
		return
	}
	c := &compState{}
	for _, s := range d.OnFailure {
		c.Steps = append(c.Steps, s.ID)
	}
	r.Compensation = c
}

// compensateInstead is endRun's first look: it reports whether the end
// was taken over by the compensation — a failure of a run with
// on_failure steps starts them instead of ending the run; the failure of
// a compensation step ends it (failed, with the original error).
func (e *Engine) compensateInstead(r *runRecord, status cairn.RunStatus, why *cairn.ErrorInfo, now time.Time) bool {
	c := r.Compensation
	if c == nil {
		return false
	}
	switch {
	case c.Status == "" && status == cairn.RunFailed:
		c.Status, c.Failure = cairn.CompensationRunning, why
		r.Error = why
		for _, st := range r.Steps {
			if !st.Status.Done() {
				st.Status, st.WakeAt = cairn.StepCancelled, nil
			}
		}
		for _, id := range c.Steps {
			r.Steps[id] = &stepState{Status: cairn.StepPending}
		}
		r.journal(now, cairn.JournalEntry{Type: cairn.JournalCompensationStarted, Error: why, Message: "running on_failure steps"})
		return true
	case c.Status == cairn.CompensationRunning:
		switch status {
		case cairn.RunFailed:
			c.Status, c.Error = cairn.CompensationFailed, why
		case cairn.RunCompleted:
			c.Status = cairn.CompensationCompleted
		default:
			c.Status, c.Error = cairn.CompensationCancelled, why
		}
		r.journal(now, cairn.JournalEntry{Type: cairn.JournalCompensationEnded, Error: c.Error, Message: "compensation " + string(c.Status)})
	}
	return false
}

// compensating reports whether the run runs its on_failure steps.
func (r *runRecord) compensating() bool {
	return r.Compensation != nil && r.Compensation.Status == cairn.CompensationRunning
}

// advanceSteps is the steps advance starts: the workflow's, and its
// on_failure steps while it compensates.
func advanceSteps(r *runRecord, d *definition) []cairn.Step {
	if r.compensating() {
		return d.OnFailure
	}
	return d.Steps
}

// compensationDone ends a compensating run whose on_failure steps are
// all settled: failed, with the failure that started the compensation.
func (e *Engine) compensationDone(r *runRecord, fx *effects) {
	for _, id := range r.Compensation.Steps {
		if !r.Steps[id].Status.Settled() {
			return
		}
	}
	e.endRun(r, cairn.RunCompleted, nil, fx.now, "")
}

// compSteps lists the on_failure steps present in a run record.
func compSteps(r *runRecord) []string {
	if r.Compensation == nil || r.Compensation.Status == "" {
		return nil
	}
	return r.Compensation.Steps
}

func compView(r *runRecord) *cairn.Compensation {
	if r.Compensation == nil || r.Compensation.Status == "" {
		return nil
	}
	c := r.Compensation
	return &cairn.Compensation{Status: c.Status, Failure: c.Failure, Error: c.Error}
}
