package sdk

import (
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// Aliases of the root package's types the SDK hands out, so programs
// need not import it. The views (Run's, StepView, RunSummary, …) are the
// very types the engine returns and the API encodes: the SDK decodes the
// API's JSON into them, so every field the API sends reaches the program.
type (
	// Usage is what an attempt consumed: model tokens (priced by the
	// engine, model by model when it used several) and free counters.
	Usage = cairn.Usage
	// ModelUsage is one model's share of a Usage of several models.
	ModelUsage = cairn.ModelUsage
	// Budget limits what a run may consume: cost, tokens, counters.
	Budget = cairn.Budget
	// Reducer is how a state key folds what steps write (WorkflowDef.Reduce).
	Reducer = cairn.Reducer
	// ErrorInfo is how a step or run failed.
	ErrorInfo = cairn.ErrorInfo
	// RunStatus is where a run is in its life.
	RunStatus = cairn.RunStatus
	// StepStatus is where a step is in its life.
	StepStatus = cairn.StepStatus
	// StepKind is what a step does: task, wait or sleep.
	StepKind = cairn.StepKind
	// StepView is a step of a run: status, attempts, output, usage, and
	// the worker holding its current attempt.
	StepView = cairn.StepView
	// Holder is the worker holding a step's current attempt.
	Holder = cairn.Holder
	// Attempt records one lease of a task step.
	Attempt = cairn.Attempt
	// AttemptOutcome is how an attempt ended.
	AttemptOutcome = cairn.AttemptOutcome
	// JournalEntry is one thing that happened to a run.
	JournalEntry = cairn.JournalEntry
	// JournalType is what a journal entry records.
	JournalType = cairn.JournalType
	// RunSummary is a run in a listing.
	RunSummary = cairn.RunSummary
	// RunPage is a page of runs, newest first. NextCursor fetches the
	// next page; empty on the last. A filtered page may hold fewer runs
	// than the limit and still have a next page.
	RunPage = cairn.RunPage
	// EventResult says what an event did: the wait steps it resumed, or
	// that it was recorded for a later wait, or that its id was a
	// duplicate.
	EventResult = cairn.EventResult
	// WorkflowSummary describes a registered workflow: its latest
	// version (the default for new runs) and every version, oldest first.
	WorkflowSummary = cairn.WorkflowSummary
	// WorkerInfo describes a registered worker.
	WorkerInfo = cairn.WorkerInfo
	// InputView is the rendered input an attempt's lease gave its worker.
	InputView = cairn.InputView
)

// Run statuses.
const (
	RunRunning   = cairn.RunRunning
	RunPaused    = cairn.RunPaused
	RunCompleted = cairn.RunCompleted
	RunFailed    = cairn.RunFailed
	RunCancelled = cairn.RunCancelled
	RunTimedOut  = cairn.RunTimedOut
)

// Singleton modes (WorkflowDef.Singleton).
const (
	SingletonSkip          = cairn.SingletonSkip
	SingletonCancelRunning = cairn.SingletonCancelRunning
)

// State reducers (WorkflowDef.Reduce).
const (
	ReduceReplace = cairn.ReduceReplace
	ReduceAppend  = cairn.ReduceAppend
	ReduceSum     = cairn.ReduceSum
	ReduceMax     = cairn.ReduceMax
	ReduceMin     = cairn.ReduceMin
	ReduceMerge   = cairn.ReduceMerge
)

// Step statuses.
const (
	StepPending   = cairn.StepPending
	StepReady     = cairn.StepReady
	StepWaiting   = cairn.StepWaiting
	StepSleeping  = cairn.StepSleeping
	StepCompleted = cairn.StepCompleted
	StepFailed    = cairn.StepFailed
	StepCancelled = cairn.StepCancelled
	StepSkipped   = cairn.StepSkipped
	// StepInterrupted: the step's body interrupted (Interrupt) and waits
	// for Client.ResumeStep.
	StepInterrupted = cairn.StepInterrupted
)

// Run is a run as the API shows it (cairn.Run: status, input, state,
// steps, output, error, usage), and, from Start, whether it existed.
type Run struct {
	cairn.Run
	// Existed is set by Start when the idempotency key named a run
	// started earlier, or a singleton key a running run (Skipped).
	Existed bool `json:"existed,omitempty"`
	// Skipped is set by Start when the workflow's singleton key was held
	// by a running run: nothing started, and this is that run.
	Skipped bool `json:"skipped,omitempty"`
}

// Decode decodes the run's output into v.
func (r *Run) Decode(v any) error {
	if len(r.Output) == 0 {
		return fmt.Errorf("cairn: run %s has no output (status %s)", r.ID, r.Status)
	}
	return json.Unmarshal(r.Output, v)
}

// Err returns nil for a run that completed or is still running, and a
// *RunError for one that failed, was cancelled or timed out.
func (r *Run) Err() error {
	if !r.Status.Terminal() || r.Status == RunCompleted {
		return nil
	}
	return &RunError{Run: r.ID, Status: r.Status, Info: r.Error}
}

// RunError is a run that ended without completing.
type RunError struct {
	Run    string
	Status RunStatus
	Info   *ErrorInfo
}

func (e *RunError) Error() string {
	msg := fmt.Sprintf("run %s %s", e.Run, e.Status)
	if i := e.Info; i != nil {
		if i.Step != "" {
			msg += ": step " + i.Step
		}
		msg += ": " + i.Class
		if i.Message != "" && i.Message != i.Class {
			msg += ": " + i.Message
		}
	}
	return msg
}

// usageTo is the usage a worker reports. Costs are left out: the engine
// prices tokens itself.
func usageTo(u Usage) *client.Usage {
	if u.IsZero() {
		return nil
	}
	out := &client.Usage{Model: ptr(u.Model), InputTokens: ptr(u.InputTokens), OutputTokens: ptr(u.OutputTokens)}
	if len(u.Models) > 0 {
		models := make(map[string]client.ModelUsage, len(u.Models))
		for m, mu := range u.Models {
			models[m] = client.ModelUsage{InputTokens: ptr(mu.InputTokens), OutputTokens: ptr(mu.OutputTokens)}
		}
		out.Models = &models
	}
	if len(u.Counters) > 0 {
		c := u.Counters
		out.Counters = &c
	}
	return out
}
