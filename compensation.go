package cairn

import "fmt"

// Compensation statuses: how a failed run's on_failure steps went.
type CompensationStatus string

// Compensation statuses.
const (
	// CompensationRunning: the run failed and its on_failure steps run;
	// the run's status stays running until they are done.
	CompensationRunning CompensationStatus = "running"
	// CompensationCompleted: every on_failure step completed (or was
	// skipped). The run is failed, with its original error.
	CompensationCompleted CompensationStatus = "completed"
	// CompensationFailed: an on_failure step failed. The run is failed,
	// with its original error; the compensation's error says which step.
	CompensationFailed CompensationStatus = "failed"
	// CompensationCancelled: the run was cancelled or timed out while
	// compensating.
	CompensationCancelled CompensationStatus = "cancelled"
)

// Values lists every compensation status (the API's enum).
func (CompensationStatus) Values() []CompensationStatus {
	return []CompensationStatus{CompensationRunning, CompensationCompleted, CompensationFailed, CompensationCancelled}
}

// Compensation is a run's compensation (its workflow's on_failure steps)
// once the run failed.
type Compensation struct {
	Status CompensationStatus `json:"status"`
	// Failure is the error the run failed with, which started the
	// compensation (also the run's error once it ended).
	Failure *ErrorInfo `json:"failure,omitempty"`
	Error   *ErrorInfo `json:"error,omitempty" doc:"Why the compensation did not complete."`
}

// validateOnFailure checks a workflow's on_failure steps: task steps
// whose ids are unique among all the workflow's steps and whose after
// names other on_failure steps only, without cycles.
func (w *Workflow) validateOnFailure(add func(field, format string, args ...any)) {
	if len(w.OnFailure) > 100 {
		add(".on_failure", "at most 100 steps")
	}
	ids := map[string]bool{}
	for _, s := range w.Steps {
		ids[s.ID] = true
	}
	comp := map[string]bool{}
	for i, s := range w.OnFailure {
		f := fmt.Sprintf(".on_failure[%d]", i)
		switch {
		case !stepRE.MatchString(s.ID) || len(s.ID) > 64:
			add(f+".id", "must match %s and be at most 64 bytes", stepRE)
		case ids[s.ID] || comp[s.ID]:
			add(f+".id", "duplicate step id %q (step ids are unique across steps and on_failure)", s.ID)
		}
		comp[s.ID] = true
		if s.EffectiveKind() != KindTask {
			add(f+".kind", "on_failure steps are task steps")
		} else {
			checkStep(&s, func(field, format string, args ...any) { add(f+field, format, args...) })
		}
		if s.When != "" {
			add(f+".when", "on_failure steps take no when condition")
		}
		if len(s.Next) > 0 {
			add(f+".next", "on_failure steps do not loop")
		}
	}
	for i, s := range w.OnFailure {
		for j, a := range s.After {
			if !comp[a] || a == s.ID {
				add(fmt.Sprintf(".on_failure[%d].after[%d]", i, j), "unknown on_failure step %q (on_failure steps run after other on_failure steps only)", a)
			}
		}
	}
	if len(w.OnFailure) > 0 {
		sub := Workflow{Steps: w.OnFailure}
		if cycle := sub.findCycle(); cycle != nil {
			add(".on_failure", "dependency cycle: %v", cycle)
		}
	}
}
