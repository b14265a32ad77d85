package cairn

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// RunStatus is where a run is in its life.
type RunStatus string

// Run statuses. Every status but running and paused is terminal.
const (
	RunRunning RunStatus = "running"
	// RunPaused: the run is offered to no worker and its due times wait
	// (POST /runs/{run}/pause); a resume makes it running again.
	RunPaused    RunStatus = "paused"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
	RunTimedOut  RunStatus = "timed_out"
)

// Values lists every run status (the API's enum of run statuses).
func (RunStatus) Values() []RunStatus {
	return []RunStatus{RunRunning, RunPaused, RunCompleted, RunFailed, RunCancelled, RunTimedOut}
}

// Terminal reports whether a run in status s has ended (a paused run has
// not).
func (s RunStatus) Terminal() bool { return s != RunRunning && s != RunPaused && s != "" }

// StepStatus is where a step is in its life, as the run record sees it.
type StepStatus string

// Step statuses. A task step that is "ready" may be offered to a worker
// or held by one: leases live in their own objects, so the run record does
// not change when a step is claimed.
const (
	StepPending   StepStatus = "pending"   // waiting for its dependencies
	StepReady     StepStatus = "ready"     // a task attempt is claimable or held
	StepWaiting   StepStatus = "waiting"   // a wait step waits for its event
	StepSleeping  StepStatus = "sleeping"  // a sleep step sleeps
	StepCompleted StepStatus = "completed" // done, with an output
	StepFailed    StepStatus = "failed"    // failed for good
	StepCancelled StepStatus = "cancelled" // the run ended first
	// StepSkipped: the step's when condition was false, or every one of
	// its dependencies was skipped. A skipped step counts as done for its
	// dependents and for the run's completion, and has no output.
	StepSkipped StepStatus = "skipped"
	// StepMapping: a map step runs its items.
	StepMapping StepStatus = "mapping"
	// StepChildRunning: a child step waits for its child run to end.
	StepChildRunning StepStatus = "child_running"
	// StepInterrupted: a body stopped with a payload for whoever resumes
	// it (POST /runs/{run}/steps/{step}/resume); no attempt is offered
	// until then.
	StepInterrupted StepStatus = "interrupted"
)

// Values lists every step status (the API's enum of step statuses).
func (StepStatus) Values() []StepStatus {
	return []StepStatus{StepPending, StepReady, StepWaiting, StepSleeping, StepCompleted, StepFailed, StepCancelled, StepSkipped, StepMapping, StepChildRunning, StepInterrupted}
}

// Active reports whether a step in status s has started and is not done:
// a task's attempt is ready or held, a wait waits, a sleep sleeps.
func (s StepStatus) Active() bool { return s != "" && s != StepPending && !s.Done() }

// Done reports whether a step in status s will not change any more.
func (s StepStatus) Done() bool {
	return s == StepCompleted || s == StepFailed || s == StepCancelled || s == StepSkipped
}

// Settled reports whether a step in status s lets its dependents go on:
// it completed, or it was skipped.
func (s StepStatus) Settled() bool { return s == StepCompleted || s == StepSkipped }

// Error classes with a meaning to the engine. Any other class is a typed
// failure: retried unless the step's retry policy lists it as
// non-retryable.
const (
	// ClassRetryable is retried with backoff within the step's budget.
	ClassRetryable = "retryable"
	// ClassFatal fails the step at once.
	ClassFatal = "fatal"
	// ClassUnservable: the worker does not hold the definition. The attempt
	// goes back to the queue at once, spending no retry budget, and is not
	// offered to the same worker for a while.
	ClassUnservable = "unservable"
	// ClassRenderError: the engine could not render the step's input
	// template. Not retried.
	ClassRenderError = "render_error"
	// ClassTimeout: an attempt outlived its timeout, or a wait its
	// wait_timeout. Retried like a typed failure.
	ClassTimeout = "timeout"
	// ClassLost: the lease of an at_most_once attempt that had started
	// expired; the body may or may not have run. Not retried.
	ClassLost = "lost"
	// ClassDeadLettered: the step's leases were lost max_deliveries times.
	ClassDeadLettered = "dead_lettered"
	// ClassPanic: the body panicked. Retried like a typed failure, except
	// on a started at_most_once attempt.
	ClassPanic = "panic"
	// ClassOutputTooLarge: the step's output or state patch would have
	// grown the run record past its limit. Not retried.
	ClassOutputTooLarge = "output_too_large"
	// ClassInterrupted: the worker stopped (drained) before the body
	// ended. Retried, except on a started at_most_once attempt.
	ClassInterrupted = "interrupted"
	// ClassCancelled: the run was cancelled (a run's error only).
	ClassCancelled = "cancelled"
)

// ErrorInfo is how a step or run failed.
type ErrorInfo struct {
	Class   string `json:"class" doc:"Error class: retryable, fatal, unservable, render_error, timeout, lost, dead_lettered, or one the worker named."`
	Message string `json:"message" doc:"What went wrong, as the worker or engine said it (no stack traces)."`
	Step    string `json:"step,omitempty" doc:"For a run's error: the step that failed it."`
}

// MixedModels is Usage.Model when the usage is of several models: Models
// then holds each one's share.
const MixedModels = "mixed"

// Usage is what an attempt consumed (or a step's attempts, or a run's
// steps, summed): tokens of one model or several, priced by the engine's
// price book, and free counters.
//
// InputTokens, OutputTokens and CostUSD are always the totals. Usage of one
// model names it in Model and leaves Models empty, as usage always looked.
// Usage of several models has Model "mixed" and each model's tokens and
// cost in Models. When Models is set it is the breakdown: tokens recorded
// without a model count in the totals only, and are not priced.
type Usage struct {
	Model        string                `json:"model,omitempty" doc:"The model the tokens are of, priced by the engine's price book; \"mixed\" when models holds several."`
	InputTokens  int64                 `json:"input_tokens,omitempty" minimum:"0" doc:"All input tokens, over every model."`
	OutputTokens int64                 `json:"output_tokens,omitempty" minimum:"0" doc:"All output tokens, over every model."`
	CostUSD      float64               `json:"cost_usd,omitempty" doc:"Priced by the engine (over every model); ignored on input."`
	Models       map[string]ModelUsage `json:"models,omitempty" doc:"Tokens and cost per model, when the usage is of several models (model is then \"mixed\"); each model is priced by the engine. Tokens without a model count in the totals only."`
	Counters     map[string]int64      `json:"counters,omitempty" doc:"Free counters, summed per step and run."`
}

// String is u for people: "m, 3 in / 4 out tokens, $0.0001, calls=2"
// (counters by name), as the CLI and the dashboard print it.
func (u Usage) String() string {
	var parts []string
	if u.Model != "" {
		parts = append(parts, u.Model)
	}
	if u.InputTokens != 0 || u.OutputTokens != 0 {
		parts = append(parts, fmt.Sprintf("%d in / %d out tokens", u.InputTokens, u.OutputTokens))
	}
	if u.CostUSD != 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", u.CostUSD))
	}
	for _, k := range slices.Sorted(maps.Keys(u.Counters)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, u.Counters[k]))
	}
	return strings.Join(parts, ", ")
}

// ModelUsage is one model's share of a Usage.
type ModelUsage struct {
	InputTokens  int64   `json:"input_tokens,omitempty" minimum:"0"`
	OutputTokens int64   `json:"output_tokens,omitempty" minimum:"0"`
	CostUSD      float64 `json:"cost_usd,omitempty" doc:"Priced by the engine; ignored on input."`
}

// ByModel returns the tokens and cost of each model u is of: Models when
// set, else Model with the totals; nil when u names no model. The map is
// a copy.
func (u Usage) ByModel() map[string]ModelUsage {
	if len(u.Models) > 0 {
		out := make(map[string]ModelUsage, len(u.Models))
		for m, mu := range u.Models {
			out[m] = mu
		}
		return out
	}
	if u.Model != "" && u.Model != MixedModels {
		return map[string]ModelUsage{u.Model: {InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}}
	}
	return nil
}

// Add adds o to u, model by model: usage of one model keeps the
// single-model form, usage of several gets Models (and Model "mixed").
// u shares no map with o afterwards.
func (u *Usage) Add(o Usage) {
	models := u.ByModel()
	for m, mu := range o.ByModel() {
		if models == nil {
			models = map[string]ModelUsage{}
		}
		cur := models[m]
		cur.InputTokens += mu.InputTokens
		cur.OutputTokens += mu.OutputTokens
		cur.CostUSD += mu.CostUSD
		models[m] = cur
	}
	// "mixed" without a breakdown: usage summed before Models existed. It
	// stays mixed.
	mixed := u.Model == MixedModels && len(u.Models) == 0 || o.Model == MixedModels && len(o.Models) == 0
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CostUSD += o.CostUSD
	for k, v := range o.Counters {
		if u.Counters == nil {
			u.Counters = map[string]int64{}
		}
		u.Counters[k] += v
	}
	u.setModels(models, mixed)
}

// setModels sets Model and Models from a breakdown per model, in the
// smallest form that says it all: one model whose tokens are all of u's
// is Model alone.
func (u *Usage) setModels(models map[string]ModelUsage, mixed bool) {
	if len(models) == 0 {
		u.Models = nil
		if mixed {
			u.Model = MixedModels
		} else {
			u.Model = ""
		}
		return
	}
	if len(models) > 1 || mixed {
		u.Model, u.Models = MixedModels, models
		return
	}
	for m, mu := range models {
		u.Model, u.Models = m, nil
		if mu.InputTokens != u.InputTokens || mu.OutputTokens != u.OutputTokens {
			u.Models = models // some tokens are of no model
		}
	}
}

// IsZero reports whether u records nothing.
func (u Usage) IsZero() bool {
	return u.Model == "" && u.InputTokens == 0 && u.OutputTokens == 0 && u.CostUSD == 0 && len(u.Models) == 0 && len(u.Counters) == 0
}

// AttemptOutcome is how an attempt of a task step ended.
type AttemptOutcome string

// Attempt outcomes. completed and failed are set only by the lease's own
// complete and fail; the engine ends attempts as timed_out or lost. An
// attempt still running, or cut short by the end of its run, has none.
const (
	OutcomeCompleted AttemptOutcome = "completed" // the worker completed it
	OutcomeFailed    AttemptOutcome = "failed"    // the worker failed it
	OutcomeTimedOut  AttemptOutcome = "timed_out" // it outlived the step's timeout
	OutcomeLost      AttemptOutcome = "lost"      // its lease expired unanswered
	// OutcomeSuspended: a function's driver suspended (a sleep): the step
	// goes on in a later attempt, which replays its history.
	OutcomeSuspended AttemptOutcome = "suspended"
	// OutcomeInterrupted: the body interrupted with a payload; the step
	// waits for a resume, which runs it again (no retry budget spent).
	OutcomeInterrupted AttemptOutcome = "interrupted"
)

// Values lists every outcome the engine records (the API's enum).
func (AttemptOutcome) Values() []AttemptOutcome {
	return []AttemptOutcome{OutcomeCompleted, OutcomeFailed, OutcomeTimedOut, OutcomeLost, OutcomeSuspended, OutcomeInterrupted}
}

// Attempt records one lease of a task step.
type Attempt struct {
	N         int             `json:"n" doc:"Attempt number, from 1; every lease is a new attempt."`
	Worker    string          `json:"worker,omitempty" doc:"The worker that held the lease."`
	ClaimedAt *time.Time      `json:"claimed_at,omitempty"`
	StartedAt *time.Time      `json:"started_at,omitempty"`
	EndedAt   *time.Time      `json:"ended_at,omitempty"`
	Outcome   AttemptOutcome  `json:"outcome,omitempty" doc:"How the attempt ended; absent while it runs."`
	Error     *ErrorInfo      `json:"error,omitempty"`
	Usage     *Usage          `json:"usage,omitempty"`
	Summary   json.RawMessage `json:"summary,omitempty" doc:"What the worker summarised the attempt as (complete or fail); never read by the flow."`
}

// JournalType is what a journal entry records.
type JournalType string

// Journal entry types.
const (
	JournalRunStarted   JournalType = "run_started"
	JournalRunCompleted JournalType = "run_completed"
	JournalRunFailed    JournalType = "run_failed"
	JournalRunCancelled JournalType = "run_cancelled"
	JournalRunTimedOut  JournalType = "run_timed_out"
	// JournalStepReady: a task attempt became claimable (now, or after a
	// retry backoff).
	JournalStepReady JournalType = "step_ready"
	// JournalStepClaimed: a worker held the attempt (dated at its claim).
	JournalStepClaimed JournalType = "step_claimed"
	// JournalStepStarted: the worker said the body started. Only the
	// journal of a running attempt shows it, read from the lease.
	JournalStepStarted   JournalType = "step_started"
	JournalStepCompleted JournalType = "step_completed"
	JournalStepFailed    JournalType = "step_failed"
	// JournalStepRequeued: a worker could not serve the attempt
	// (unservable); it was offered again without spending retry budget.
	JournalStepRequeued JournalType = "step_requeued"
	// JournalStepRetryScheduled: the attempt failed and another is
	// scheduled after a backoff.
	JournalStepRetryScheduled JournalType = "step_retry_scheduled"
	// JournalLeaseLost: an attempt's lease expired without an answer.
	JournalLeaseLost JournalType = "lease_lost"
	// JournalStepSkipped: the step's when condition was false, or all of
	// its dependencies were skipped (the message says which).
	JournalStepSkipped   JournalType = "step_skipped"
	JournalWaitStarted   JournalType = "wait_started"
	JournalSleepStarted  JournalType = "sleep_started"
	JournalEventReceived JournalType = "event_received"
	// JournalMapStarted: a map step rendered its items and started them.
	JournalMapStarted JournalType = "map_started"
	// JournalChildStarted: a child step started its child run.
	JournalChildStarted JournalType = "child_started"
	// JournalCompensationStarted: the run failed and its on_failure steps
	// start; JournalCompensationEnded: they are done (the message says how).
	JournalCompensationStarted JournalType = "compensation_started"
	JournalCompensationEnded   JournalType = "compensation_ended"
	// JournalOperation: a function step checkpointed an operation (the
	// message names it); JournalStepSuspended: its driver suspended.
	JournalOperation     JournalType = "operation"
	JournalStepSuspended JournalType = "step_suspended"
	// JournalRunPaused, JournalRunResumed: the run was paused, resumed.
	JournalRunPaused  JournalType = "run_paused"
	JournalRunResumed JournalType = "run_resumed"
	// JournalStepInterrupted: a body interrupted (data: its payload);
	// JournalStepResumed: someone resumed it (data: the value).
	JournalStepInterrupted JournalType = "step_interrupted"
	JournalStepResumed     JournalType = "step_resumed"
	// JournalStepLooped: a step's next routed the run back to an earlier
	// step (the message names it and the visit).
	JournalStepLooped JournalType = "step_looped"
)

// Values lists every journal entry type (the API's enum).
func (JournalType) Values() []JournalType {
	return []JournalType{
		JournalRunStarted, JournalStepReady, JournalStepClaimed, JournalStepStarted, JournalStepCompleted,
		JournalStepFailed, JournalStepRequeued, JournalStepRetryScheduled, JournalStepSkipped, JournalLeaseLost, JournalWaitStarted,
		JournalEventReceived, JournalSleepStarted, JournalRunCompleted, JournalRunFailed, JournalRunCancelled,
		JournalRunTimedOut, JournalMapStarted, JournalChildStarted, JournalCompensationStarted, JournalCompensationEnded,
		JournalOperation, JournalStepSuspended, JournalRunPaused, JournalRunResumed,
		JournalStepInterrupted, JournalStepResumed, JournalStepLooped,
	}
}

// JournalRunEnded is the journal type of a run's end in status s ("" for
// a status that is no end).
func JournalRunEnded(s RunStatus) JournalType {
	switch s {
	case RunCompleted:
		return JournalRunCompleted
	case RunFailed:
		return JournalRunFailed
	case RunCancelled:
		return JournalRunCancelled
	case RunTimedOut:
		return JournalRunTimedOut
	}
	return ""
}

// JournalEntry is one thing that happened to a run.
type JournalEntry struct {
	At      time.Time       `json:"at"`
	Type    JournalType     `json:"type" doc:"What happened."`
	Step    string          `json:"step,omitempty"`
	Attempt int             `json:"attempt,omitempty"`
	Worker  string          `json:"worker,omitempty"`
	Message string          `json:"message,omitempty"`
	Error   *ErrorInfo      `json:"error,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	Cached  *CacheHit       `json:"cached,omitempty" doc:"On a step_completed: the step was completed from its result cache, with the output of this attempt."`
}

// Reason is why the engine refused a worker call.
type Reason string

// Rejection reasons of the worker protocol: a worker call the engine
// cannot accept is refused with HTTP 409 and one of these.
const (
	// ReasonAlreadyApplied: an earlier complete/fail of this lease was
	// applied and its answer lost. Treat as success.
	ReasonAlreadyApplied Reason = "already_applied"
	// ReasonFenced: a later attempt exists, or another lease finished the
	// step. Drop the work.
	ReasonFenced Reason = "fenced"
	// ReasonRunTerminal: the run has ended. Stop, and stop claiming for it.
	ReasonRunTerminal Reason = "run_terminal"
	// ReasonNotStarted: complete/fail of an at_most_once attempt whose
	// started never arrived. A worker bug.
	ReasonNotStarted Reason = "not_started"
	// ReasonTooLarge: complete/fail would grow the run record past its
	// limit (the message names it). Nothing was applied; the lease is
	// still held. SDKs fail the step with class output_too_large.
	ReasonTooLarge Reason = "too_large"
)

// Values lists every rejection reason (the API's enum).
func (Reason) Values() []Reason {
	return []Reason{ReasonAlreadyApplied, ReasonFenced, ReasonRunTerminal, ReasonNotStarted, ReasonTooLarge}
}

// Rejection is a worker call the engine refused, with its reason.
type Rejection struct {
	Reason  Reason
	Message string
}

func (r *Rejection) Error() string { return string(r.Reason) + ": " + r.Message }
