package sdk

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// Aliases of the domain types the SDK hands out, so programs need not
// import the root package.
type (
	// Usage is what an attempt consumed: model tokens (priced by the
	// engine, model by model when it used several) and free counters.
	Usage = cairn.Usage
	// ModelUsage is one model's share of a Usage of several models.
	ModelUsage = cairn.ModelUsage
	// ErrorInfo is how a step or run failed.
	ErrorInfo = cairn.ErrorInfo
	// RunStatus is where a run is in its life.
	RunStatus = cairn.RunStatus
	// StepStatus is where a step is in its life.
	StepStatus = cairn.StepStatus
	// Attempt records one lease of a task step.
	Attempt = cairn.Attempt
	// JournalEntry is one thing that happened to a run.
	JournalEntry = cairn.JournalEntry
	// JournalType is what a journal entry records.
	JournalType = cairn.JournalType
	// AttemptOutcome is how an attempt ended.
	AttemptOutcome = cairn.AttemptOutcome
)

// Run statuses.
const (
	RunRunning   = cairn.RunRunning
	RunCompleted = cairn.RunCompleted
	RunFailed    = cairn.RunFailed
	RunCancelled = cairn.RunCancelled
	RunTimedOut  = cairn.RunTimedOut
)

// Run is a run as the API shows it.
type Run struct {
	ID          string                     `json:"id"`
	Workflow    string                     `json:"workflow"`
	Version     string                     `json:"version"`
	Status      RunStatus                  `json:"status"`
	Input       json.RawMessage            `json:"input,omitempty"`
	State       map[string]json.RawMessage `json:"state"`
	Correlation string                     `json:"correlation,omitempty"`
	CreatedAt   time.Time                  `json:"created_at"`
	UpdatedAt   time.Time                  `json:"updated_at"`
	EndedAt     *time.Time                 `json:"ended_at,omitempty"`
	Deadline    *time.Time                 `json:"deadline,omitempty"`
	// Output is the only sink step's output, or an object of every sink's
	// output by step id.
	Output        json.RawMessage `json:"output,omitempty"`
	Error         *ErrorInfo      `json:"error,omitempty"`
	Usage         Usage           `json:"usage"`
	Steps         []StepView      `json:"steps"`
	StepsDone     int             `json:"steps_done"`
	StepsTotal    int             `json:"steps_total"`
	PendingEvents []string        `json:"pending_events,omitempty"`
	// Existed is set by Start when the idempotency key named a run
	// started earlier.
	Existed bool `json:"existed,omitempty"`
}

// StepView is a step of a run.
type StepView struct {
	ID       string          `json:"id"`
	Kind     cairn.StepKind  `json:"kind"`
	Status   StepStatus      `json:"status"`
	Attempt  int             `json:"attempt,omitempty"`
	Failures int             `json:"failures,omitempty"`
	ReadyAt  *time.Time      `json:"ready_at,omitempty"`
	WakeAt   *time.Time      `json:"wake_at,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    *ErrorInfo      `json:"error,omitempty"`
	Usage    Usage           `json:"usage"`
	Attempts []Attempt       `json:"attempts,omitempty"`
}

// RunSummary is a run in a listing.
type RunSummary struct {
	ID         string     `json:"id"`
	Workflow   string     `json:"workflow"`
	Version    string     `json:"version"`
	Status     RunStatus  `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	StepsDone  int        `json:"steps_done"`
	StepsTotal int        `json:"steps_total"`
	Error      *ErrorInfo `json:"error,omitempty"`
}

// Step returns the run's step with the given id, or nil.
func (r *Run) Step(id string) *StepView {
	for i := range r.Steps {
		if r.Steps[i].ID == id {
			return &r.Steps[i]
		}
	}
	return nil
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

func errorFrom(e *client.ErrorInfo) *ErrorInfo {
	if e == nil {
		return nil
	}
	return &ErrorInfo{Class: e.Class, Message: e.Message, Step: deref(e.Step)}
}

func usageFrom(u client.Usage) Usage {
	out := Usage{
		Model: deref(u.Model), InputTokens: deref(u.InputTokens), OutputTokens: deref(u.OutputTokens),
		CostUSD: deref(u.CostUsd), Counters: deref(u.Counters),
	}
	if u.Models != nil && len(*u.Models) > 0 {
		out.Models = make(map[string]ModelUsage, len(*u.Models))
		for m, mu := range *u.Models {
			out.Models[m] = ModelUsage{InputTokens: deref(mu.InputTokens), OutputTokens: deref(mu.OutputTokens), CostUSD: deref(mu.CostUsd)}
		}
	}
	return out
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

func runFrom(r *client.Run) *Run {
	out := &Run{
		ID: r.Id, Workflow: r.Workflow, Version: r.Version, Status: RunStatus(r.Status), Input: r.Input,
		State: r.State, Correlation: deref(r.Correlation), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		EndedAt: r.EndedAt, Deadline: r.Deadline, Output: r.Output, Error: errorFrom(r.Error),
		Usage: usageFrom(r.Usage), StepsDone: int(r.StepsDone), StepsTotal: int(r.StepsTotal),
		PendingEvents: derefSlice(r.PendingEvents),
	}
	for _, s := range derefSlice(r.Steps) {
		sv := StepView{
			ID: s.Id, Kind: cairn.StepKind(s.Kind), Status: StepStatus(s.Status), Attempt: int(deref(s.Attempt)),
			Failures: int(deref(s.Failures)), ReadyAt: s.ReadyAt, WakeAt: s.WakeAt, Output: s.Output,
			Error: errorFrom(s.Error), Usage: usageFrom(s.Usage),
		}
		for _, a := range derefSlice(s.Attempts) {
			at := Attempt{
				N: int(a.N), Worker: deref(a.Worker), ClaimedAt: a.ClaimedAt, StartedAt: a.StartedAt,
				EndedAt: a.EndedAt, Outcome: cairn.AttemptOutcome(deref(a.Outcome)), Error: errorFrom(a.Error),
			}
			if a.Usage != nil {
				u := usageFrom(*a.Usage)
				at.Usage = &u
			}
			sv.Attempts = append(sv.Attempts, at)
		}
		out.Steps = append(out.Steps, sv)
	}
	return out
}
