package cairn

import (
	"encoding/json"
	"time"
)

// The API's views of runs, workflows and workers: what the engine
// returns, the API sends and the SDK decodes, one set of types for all
// three. Their JSON is the wire format.

// Run is a run as the API shows it: the run record without the engine's
// bookkeeping, with its steps in definition order.
type Run struct {
	ID            string                     `json:"id"`
	Workflow      string                     `json:"workflow"`
	Version       string                     `json:"version"`
	Status        RunStatus                  `json:"status"`
	Input         json.RawMessage            `json:"input,omitempty"`
	State         map[string]json.RawMessage `json:"state"`
	Correlation   string                     `json:"correlation,omitempty"`
	CreatedAt     time.Time                  `json:"created_at"`
	UpdatedAt     time.Time                  `json:"updated_at"`
	EndedAt       *time.Time                 `json:"ended_at,omitempty"`
	Deadline      *time.Time                 `json:"deadline,omitempty"`
	Output        json.RawMessage            `json:"output,omitempty" doc:"The only sink step's output, or an object of every sink's output by step id."`
	Error         *ErrorInfo                 `json:"error,omitempty"`
	Usage         Usage                      `json:"usage"`
	Steps         []StepView                 `json:"steps" nullable:"false"`
	StepsDone     int                        `json:"steps_done" doc:"Steps completed or skipped."`
	StepsTotal    int                        `json:"steps_total"`
	PendingEvents []string                   `json:"pending_events" nullable:"false" doc:"Events received that no wait has consumed yet; empty when none."`
	RerunOf       string                     `json:"rerun_of,omitempty" doc:"The run this one reran, reusing its completed steps' outputs."`
	NoLiveWorker  bool                       `json:"no_live_worker,omitempty" doc:"True while a task step is ready and no worker seen alive (see the workers list) serves this workflow@version: the run waits for one to start."`
	Priority      int                        `json:"priority,omitempty" doc:"The run's priority (default 0; higher is offered first)."`
	Parent        string                     `json:"parent,omitempty" doc:"For a child run: the run whose child step started it."`
	Compensation  *Compensation              `json:"compensation,omitempty" doc:"Once a run whose workflow has on_failure steps failed: how its compensation went."`
	ParentStep    string                     `json:"parent_step,omitempty" doc:"For a child run: that step."`
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

// StepView is a step of a run as the API shows it.
type StepView struct {
	ID       string          `json:"id"`
	Kind     StepKind        `json:"kind"`
	Status   StepStatus      `json:"status"`
	Attempt  int             `json:"attempt,omitempty" doc:"Current or last attempt number."`
	Failures int             `json:"failures,omitempty" doc:"Retry budget spent."`
	ReadyAt  *time.Time      `json:"ready_at,omitempty"`
	WakeAt   *time.Time      `json:"wake_at,omitempty" doc:"When a sleep ends or a wait times out."`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    *ErrorInfo      `json:"error,omitempty"`
	Usage    Usage           `json:"usage"`
	Attempts []Attempt       `json:"attempts" nullable:"false" doc:"The step's attempts; empty before the first."`
	Holder   *Holder         `json:"holder,omitempty" doc:"For a ready task step: the worker holding its current attempt, if any."`
	Event    string          `json:"event,omitempty" doc:"Wait steps: the event name that resumes the wait."`
	Map      *MapProgress    `json:"map,omitempty" doc:"For a map step: its items' progress."`
	Child    string          `json:"child,omitempty" doc:"For a child step: the id of its child run."`
}

// MapProgress is how far a map step is.
type MapProgress struct {
	Total     int         `json:"total" doc:"Items in all."`
	Completed int         `json:"completed"`
	Failed    int         `json:"failed" doc:"Items that failed for good (tolerated, or the one that failed the step)."`
	Running   int         `json:"running" doc:"Items started and not finished."`
	Errors    []ErrorInfo `json:"errors" nullable:"false" doc:"The first item errors (step names the item as <step>.<index>)."`
}

// Holder is who holds a step's current attempt.
type Holder struct {
	Worker    string     `json:"worker"`
	ClaimedAt time.Time  `json:"claimed_at"`
	StartedAt *time.Time `json:"started_at,omitempty" doc:"Set for at_most_once attempts once started."`
	ExpiresAt time.Time  `json:"expires_at"`
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
	StepsDone  int        `json:"steps_done" doc:"Steps completed or skipped."`
	StepsTotal int        `json:"steps_total"`
	Error      *ErrorInfo `json:"error,omitempty"`
}

// RunPage is a page of runs, newest first.
type RunPage struct {
	Runs       []RunSummary `json:"runs" nullable:"false"`
	NextCursor string       `json:"next_cursor,omitempty" doc:"Pass as cursor for the next page; absent on the last. A filtered page may hold fewer runs than the limit and still have a next page."`
}

// RunProgress is a run's progress without its contents (no input, outputs
// or state): what a watcher polls. Reading it is not audited.
type RunProgress struct {
	ID         string         `json:"id"`
	Workflow   string         `json:"workflow"`
	Version    string         `json:"version"`
	Status     RunStatus      `json:"status"`
	Rev        int64          `json:"rev" doc:"Counts the run's committed changes: pass it as after to wait for the next."`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
	EndedAt    *time.Time     `json:"ended_at,omitempty"`
	StepsDone  int            `json:"steps_done" doc:"Steps completed or skipped."`
	StepsTotal int            `json:"steps_total"`
	Steps      []StepProgress `json:"steps" nullable:"false"`
	Error      *ErrorInfo     `json:"error,omitempty"`
	// NoLiveWorker: see Run.NoLiveWorker.
	NoLiveWorker bool `json:"no_live_worker,omitempty" doc:"True while a task step is ready and no worker seen alive serves this workflow@version."`
	// HoldersTruncated: see the holders query parameter of the status call.
	HoldersTruncated bool `json:"holders_truncated,omitempty" doc:"With holders=true: more task steps were ready than the holders read per call; those without a holder may be held."`
}

// StepProgress is a step's progress.
type StepProgress struct {
	ID       string     `json:"id"`
	Status   StepStatus `json:"status"`
	Attempt  int        `json:"attempt,omitempty"`
	Failures int        `json:"failures,omitempty"`
	Kind     StepKind   `json:"kind,omitempty"`
	Event    string     `json:"event,omitempty" doc:"Wait steps: the event name that resumes the wait."`
	ReadyAt  *time.Time `json:"ready_at,omitempty" doc:"A task step waiting for a retry: when it becomes claimable."`
	WakeAt   *time.Time `json:"wake_at,omitempty" doc:"When a sleep ends or a wait times out."`
	Error    *ErrorInfo `json:"error,omitempty" doc:"The step's error; for a ready step being retried, the previous attempt's."`
	Holder   *Holder    `json:"holder,omitempty" doc:"With holders=true, for a ready task step: the worker holding its current attempt (absent: none holds it)."`
}

// StartResult is a started (or found) run.
type StartResult struct {
	Run     *Run `json:"run"`
	Existed bool `json:"existed" doc:"True when the idempotency key named a run started earlier."`
}

// EventResult says what an event did.
type EventResult struct {
	Resumed   []string `json:"resumed" nullable:"false" doc:"Wait steps the event completed."`
	Recorded  bool     `json:"recorded" doc:"True when no step was waiting: the event is kept for a later wait of that name."`
	Duplicate bool     `json:"duplicate" doc:"True when the event id was seen before: nothing changed."`
}

// WorkflowSummary describes a registered workflow.
type WorkflowSummary struct {
	Name     string   `json:"name"`
	Latest   string   `json:"latest" doc:"Newest registered version: the default for new runs."`
	Versions []string `json:"versions" nullable:"false" doc:"Every registered version, oldest first."`
}

// WorkerInfo describes a registered worker.
type WorkerInfo struct {
	ID           string            `json:"id"`
	Workflows    []string          `json:"workflows" nullable:"false" doc:"name@version of each definition served."`
	RegisteredAt time.Time         `json:"registered_at"`
	Labels       map[string]string `json:"labels,omitempty"`
	LastSeenAt   time.Time         `json:"last_seen_at" doc:"The worker's last claim or heartbeat the engine recorded (recorded at most once a minute per worker and API instance), or its registration."`
	Alive        bool              `json:"alive" doc:"Seen within the alive window (two recording periods plus the longest claim hold): a worker that is polling or running steps is alive."`
}
