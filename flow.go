package cairn

import (
	"fmt"
	"strings"
	"time"
)

// Flow control: concurrency limits, rate limits and priorities. The
// options are fields of Step and Workflow (workflow.go); their checks are
// here, called by Workflow.Validate.

// ConcurrencyLimit caps the attempts that may hold a lease at once among
// those sharing a key.
type ConcurrencyLimit struct {
	Key   string `json:"key,omitempty" maxLength:"512" doc:"A template over input, state, steps.<id>.output and run (such as \"${input.customer}\"), rendered when an attempt is claimed: attempts whose keys render equal share the limit. Empty: one limit for all of them (the step's, or the workflow's)."`
	Limit int    `json:"limit" minimum:"1" maximum:"1000" doc:"Most attempts holding a lease at once under one key."`
}

// RateLimit caps how many attempts sharing a key may be handed out in a
// period; attempts beyond it wait (they do not fail) and are offered when
// the rate allows.
type RateLimit struct {
	Key    string   `json:"key,omitempty" maxLength:"512" doc:"A template rendered when an attempt is claimed (such as \"${input.api}\"): attempts whose keys render equal share the rate. Empty: one rate for every attempt of the step."`
	Limit  int      `json:"limit" minimum:"1" maximum:"1000000" doc:"Attempts handed out per period."`
	Period Duration `json:"period" doc:"The period, as a Go duration: \"1s\" to \"24h\"."`
	Burst  int      `json:"burst,omitempty" minimum:"0" maximum:"1000000" doc:"Attempts that may be handed out at once (default 1: evenly spaced, period/limit apart). At most limit. Any window of one period holds at most limit+burst-1."`
}

// Priority bounds: a run's priority and a step's override lie in
// [MinPriority, MaxPriority]; higher is offered first.
const (
	MinPriority = -100
	MaxPriority = 100
	// MaxWorkflowConcurrency is how many concurrency limits a workflow may
	// declare.
	MaxWorkflowConcurrency = 4
	maxFlowKeyBytes        = 512
)

// CheckPriority reports whether p is a valid priority.
func CheckPriority(p int) error {
	if p < MinPriority || p > MaxPriority {
		return fmt.Errorf("must be between %d and %d", MinPriority, MaxPriority)
	}
	return nil
}

// validateFlow checks the flow-control options of a workflow and its
// steps. add reports a field error relative to the workflow.
func (w *Workflow) validateFlow(add func(field, format string, args ...any)) {
	w.checkSingleton(add)
	if len(w.Concurrency) > MaxWorkflowConcurrency {
		add(".concurrency", "at most %d limits", MaxWorkflowConcurrency)
	}
	for i := range w.Concurrency {
		checkConcurrency(&w.Concurrency[i], fmt.Sprintf(".concurrency[%d]", i), add)
	}
	for i := range w.Steps {
		s := &w.Steps[i]
		f := fmt.Sprintf(".steps[%d]", i)
		if s.Concurrency != nil {
			checkConcurrency(s.Concurrency, f+".concurrency", add)
		}
		if rl := s.RateLimit; rl != nil {
			checkKey(rl.Key, f+".rate_limit.key", add)
			if rl.Limit < 1 || rl.Limit > 1_000_000 {
				add(f+".rate_limit.limit", "step %s: must be between 1 and 1000000", s.ID)
			}
			if p := rl.Period.D(); p < time.Second || p > 24*time.Hour {
				add(f+".rate_limit.period", "step %s: must be between 1s and 24h", s.ID)
			} else if rl.Limit >= 1 && p/time.Duration(rl.Limit) < time.Millisecond {
				add(f+".rate_limit", "step %s: at most one attempt a millisecond (limit/period)", s.ID)
			}
			if rl.Burst < 0 || rl.Burst > rl.Limit {
				add(f+".rate_limit.burst", "step %s: must be between 0 and limit", s.ID)
			}
		}
		if s.Priority != nil {
			if err := CheckPriority(*s.Priority); err != nil {
				add(f+".priority", "step %s: %v", s.ID, err)
			}
		}
		checkLabels(s, f+".requires_labels", add)
	}
}

// Singleton modes.
const (
	// SingletonSkip: a start while a run holds the key starts nothing and
	// answers that run.
	SingletonSkip = "skip"
	// SingletonCancelRunning: a start cancels the run holding the key.
	SingletonCancelRunning = "cancel_running"
)

// Singleton keeps one running run per key of a workflow (all versions).
type Singleton struct {
	Key  string `json:"key,omitempty" maxLength:"2000" doc:"A template over the run's input (as a step's input template), rendered at start: one running run per rendered key. Empty: one running run of the workflow."`
	Mode string `json:"mode" enum:"skip,cancel_running" doc:"skip: a start while a run holds the key starts nothing and answers that run (existed and skipped true); cancel_running: the start cancels that run and starts."`
}

func (w *Workflow) checkSingleton(add func(field, format string, args ...any)) {
	if s := w.Singleton; s != nil {
		checkKey(s.Key, ".singleton.key", add)
		if s.Mode != SingletonSkip && s.Mode != SingletonCancelRunning {
			add(".singleton.mode", "must be skip or cancel_running")
		}
	}
}

// MaxRequiredLabels bounds the labels one step requires.
const MaxRequiredLabels = 16

func checkLabels(s *Step, f string, add func(field, format string, args ...any)) {
	if len(s.RequiresLabels) > MaxRequiredLabels {
		add(f, "step %s: at most %d labels", s.ID, MaxRequiredLabels)
	}
	for k, v := range s.RequiresLabels {
		if k == "" || len(k) > 64 || len(v) > 256 {
			add(f, "step %s: a label's key is 1 to 64 bytes and its value at most 256", s.ID)
			return
		}
	}
}

// LabelsMatch reports whether a worker registered with labels may run
// the step: it has every label the step requires, with its value. Any
// worker may run a nil step's (an unknown step is not this check's).
func (s *Step) LabelsMatch(labels map[string]string) bool {
	if s == nil {
		return true
	}
	for k, v := range s.RequiresLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func checkConcurrency(c *ConcurrencyLimit, f string, add func(field, format string, args ...any)) {
	checkKey(c.Key, f+".key", add)
	if c.Limit < 1 || c.Limit > 1000 {
		add(f+".limit", "must be between 1 and 1000")
	}
}

func checkKey(k, f string, add func(field, format string, args ...any)) {
	if len(k) > maxFlowKeyBytes {
		add(f, "at most %d bytes", maxFlowKeyBytes)
	} else if k != "" && strings.TrimSpace(k) == "" {
		add(f, "blank key")
	}
}

// EffectivePriority is the priority of a step of a run of the given
// priority: the step's override when it has one.
func (s *Step) EffectivePriority(run int) int {
	if s != nil && s.Priority != nil {
		return *s.Priority
	}
	return run
}
