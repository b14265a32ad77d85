package cairn

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The API's views of runs, workflows, workers, schedules and batches:
// what the engine returns, the API sends and the SDK decodes, one set of
// types for all three. Their JSON is the wire format.

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
	Attributes    map[string]json.RawMessage `json:"attributes,omitempty" doc:"The run's search attributes: set at start and by steps' completes."`
	CreatedAt     time.Time                  `json:"created_at"`
	UpdatedAt     time.Time                  `json:"updated_at"`
	EndedAt       *time.Time                 `json:"ended_at,omitempty"`
	Deadline      *time.Time                 `json:"deadline,omitempty"`
	Output        json.RawMessage            `json:"output,omitempty" doc:"The only sink step's output, or an object of every sink's output by step id."`
	Error         *ErrorInfo                 `json:"error,omitempty"`
	Usage         Usage                      `json:"usage"`
	Budget        *Budget                    `json:"budget,omitempty" doc:"The run's budget, if any: its start's, or its workflow's."`
	Steps         []StepView                 `json:"steps" nullable:"false"`
	StepsDone     int                        `json:"steps_done" doc:"Declared steps completed or skipped (a map step counts once, compensation steps not)."`
	StepsTotal    int                        `json:"steps_total" doc:"The steps the definition declares (a map step counts once, compensation steps not)."`
	PendingEvents []string                   `json:"pending_events" nullable:"false" doc:"Events received that no wait has consumed yet; empty when none."`
	Event         *EventRef                  `json:"event,omitempty" doc:"The published event (POST /events) whose trigger started this run."`
	RerunOf       string                     `json:"rerun_of,omitempty" doc:"The run this one reran, reusing its completed steps' outputs."`
	ContinuedAs   string                     `json:"continued_as,omitempty" doc:"A function's run that continued as new: the run it started (its output is {\"continued_as\": that id})."`
	ContinuedFrom string                     `json:"continued_from,omitempty" doc:"The run whose function continued as this one."`
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
	ID        string          `json:"id"`
	Kind      StepKind        `json:"kind"`
	Status    StepStatus      `json:"status"`
	Attempt   int             `json:"attempt,omitempty" doc:"Current or last attempt number."`
	Failures  int             `json:"failures,omitempty" doc:"Retry budget spent."`
	ReadyAt   *time.Time      `json:"ready_at,omitempty"`
	WakeAt    *time.Time      `json:"wake_at,omitempty" doc:"When a sleep ends or a wait times out."`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     *ErrorInfo      `json:"error,omitempty"`
	Cached    *CacheHit       `json:"cached,omitempty" doc:"The step was completed from its result cache (no worker ran it): the attempt whose output it took."`
	Usage     Usage           `json:"usage"`
	Attempts  []Attempt       `json:"attempts" nullable:"false" doc:"The step's attempts; empty before the first."`
	Holder    *Holder         `json:"holder,omitempty" doc:"For a ready task step: the worker holding its current attempt, if any."`
	Event     string          `json:"event,omitempty" doc:"Wait steps: the event name that resumes the wait."`
	Map       *MapProgress    `json:"map,omitempty" doc:"For a map step: its items' progress."`
	Child     string          `json:"child,omitempty" doc:"For a child step: the id of its child run."`
	Interrupt json.RawMessage `json:"interrupt,omitempty" doc:"The payload the step's body last interrupted with (status interrupted: waiting for a resume; kept after it)."`
	Resume    json.RawMessage `json:"resume,omitempty" doc:"The value the step was last resumed with."`
	Visits    int             `json:"visits,omitempty" doc:"How many times the step started (or was skipped): 1, plus one for each time a loop sent the run back over it. Templates see it as steps.<id>.visits."`
	// Operations is a function step's history (function.go).
	Operations []Operation `json:"operations,omitempty" nullable:"false" doc:"For a function step: the operations its body checkpointed, in order."`
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
	ID         string                     `json:"id"`
	Workflow   string                     `json:"workflow"`
	Version    string                     `json:"version"`
	Status     RunStatus                  `json:"status"`
	CreatedAt  time.Time                  `json:"created_at"`
	UpdatedAt  time.Time                  `json:"updated_at"`
	EndedAt    *time.Time                 `json:"ended_at,omitempty"`
	StepsDone  int                        `json:"steps_done" doc:"Declared steps completed or skipped (a map step counts once, compensation steps not)."`
	StepsTotal int                        `json:"steps_total" doc:"The steps the definition declares (a map step counts once, compensation steps not)."`
	Error      *ErrorInfo                 `json:"error,omitempty"`
	Attributes map[string]json.RawMessage `json:"attributes,omitempty" doc:"The run's search attributes."`
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
	StepsDone  int            `json:"steps_done" doc:"Declared steps completed or skipped (a map step counts once, compensation steps not)."`
	StepsTotal int            `json:"steps_total" doc:"The steps the definition declares (a map step counts once, compensation steps not)."`
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
	Existed bool `json:"existed" doc:"True when the idempotency key named a run started earlier, or a singleton key a running run (skipped)."`
	Skipped bool `json:"skipped,omitempty" doc:"True when the workflow's singleton key was held by a running run: nothing started, run is that run."`
}

// EventResult says what an event did.
type EventResult struct {
	Resumed   []string `json:"resumed" nullable:"false" doc:"The wait step (or waiting function step) that took the event: at most one, since an event is seen by exactly one wait."`
	Recorded  bool     `json:"recorded" doc:"True when no step was waiting: the event is kept for a later wait of that name."`
	Duplicate bool     `json:"duplicate" doc:"True when the event id was seen before: nothing changed."`
	Warning   string   `json:"warning,omitempty" doc:"Set when no wait step of the run's definition waits for the event's name: the event is kept, but nothing will consume it (a typo?)."`
}

// InputView is the rendered input an attempt's lease gave its worker.
type InputView struct {
	Input json.RawMessage `json:"input,omitempty" doc:"The input, as the worker received it (a value stored by reference stays a reference)."`
	Bytes int             `json:"bytes" doc:"Its size."`
	Kept  bool            `json:"kept" doc:"False when it was too large to keep (over 8 KiB): only its size is known."`
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
	Alive        bool              `json:"alive" doc:"Seen within the alive window (two recording periods plus the longest claim hold), and not stopped since it registered: a worker that is polling or running steps is alive."`
	StoppedAt    *time.Time        `json:"stopped_at,omitempty" doc:"When the worker said it stopped (its graceful drain ended), if it has not registered since."`
}

// Schedules: a workflow started on a cron calendar.

// Overlap policies: what a tick does while the schedule's previous run is
// still running.
const (
	OverlapSkip           = "skip"
	OverlapAllow          = "allow"
	OverlapCancelPrevious = "cancel_previous"
)

// ScheduleRequest creates a schedule.
type ScheduleRequest struct {
	ID          string          `json:"id,omitempty" maxLength:"128" pattern:"^([A-Za-z0-9][A-Za-z0-9_.-]*)?$" doc:"Schedule id; default a generated one. Creating an id that exists is a 409."`
	Workflow    string          `json:"workflow" minLength:"1" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Workflow to start."`
	Version     string          `json:"version,omitempty" maxLength:"64" pattern:"^([A-Za-z0-9][A-Za-z0-9_.+-]*)?$" doc:"Version to start; default the newest registered at each tick."`
	Cron        string          `json:"cron" minLength:"1" maxLength:"128" doc:"Five-field cron expression (minute hour day-of-month month day-of-week) or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every <duration> of at least 1m)."`
	TimeZone    string          `json:"time_zone,omitempty" maxLength:"64" doc:"IANA time zone the expression is read in (default UTC), e.g. Europe/Paris. Across a daylight-saving change a tick in the skipped hour does not fire and a tick in the repeated hour fires once."`
	Input       json.RawMessage `json:"input,omitempty" doc:"Input of every run it starts, any JSON value. Each run's correlation is schedule:<id>:<tick>, so templates see the tick as run.correlation."`
	Overlap     string          `json:"overlap,omitempty" enum:"skip,allow,cancel_previous" doc:"What a tick does while the previous run of the schedule still runs: skip the tick (default), allow a second run, or cancel_previous and start."`
	Paused      bool            `json:"paused,omitempty" doc:"Create the schedule paused."`
	Description string          `json:"description,omitempty" maxLength:"512" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"Free text."`
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	ID          string          `json:"id"`
	Workflow    string          `json:"workflow"`
	Version     string          `json:"version,omitempty"`
	Cron        string          `json:"cron"`
	TimeZone    string          `json:"time_zone"`
	Input       json.RawMessage `json:"input,omitempty"`
	Overlap     string          `json:"overlap" enum:"skip,allow,cancel_previous"`
	Paused      bool            `json:"paused"`
	Description string          `json:"description,omitempty"`
	NextAt      *time.Time      `json:"next_at,omitempty" doc:"The next tick; absent while paused."`
	Pending     *time.Time      `json:"pending,omitempty" doc:"A tick whose run is being started."`
	LastTick    *time.Time      `json:"last_tick,omitempty" doc:"The newest tick that started a run."`
	LastRun     string          `json:"last_run,omitempty" doc:"The run the newest tick started."`
	LastError   string          `json:"last_error,omitempty" doc:"Why the newest failed tick could not start a run (e.g. the workflow is not registered)."`
	Fired       int64           `json:"fired" doc:"Ticks that started a run (backfills not counted)."`
	Skipped     int64           `json:"skipped" doc:"Ticks skipped because the previous run still ran (overlap skip)."`
	Missed      int64           `json:"missed" doc:"Ticks that passed while no reaper ran; only the newest of a gap fires (backfill the others)."`
	Failed      int64           `json:"failed" doc:"Ticks whose run could not be started."`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Rev         int64           `json:"rev"`
}

// SchedulePage is a page of schedules.
type SchedulePage struct {
	Schedules  []Schedule `json:"schedules" nullable:"false"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// BackfillRequest asks for the runs of past ticks.
type BackfillRequest struct {
	From time.Time `json:"from" doc:"Ticks after this time (exclusive)..."`
	To   time.Time `json:"to" doc:"...up to this time (inclusive), at most now."`
	Max  int       `json:"max,omitempty" minimum:"0" maximum:"100" doc:"At most this many ticks, oldest first (default and cap 100)."`
}

// BackfillTick is one tick of a backfill.
type BackfillTick struct {
	Tick    time.Time `json:"tick"`
	Run     string    `json:"run"`
	Existed bool      `json:"existed" doc:"The tick already had its run (fired earlier, or an earlier backfill): nothing new started."`
}

// BackfillResult lists the ticks a backfill started.
type BackfillResult struct {
	Ticks     []BackfillTick `json:"ticks" nullable:"false"`
	Truncated bool           `json:"truncated" doc:"More ticks lay in the range than max: backfill again from the last tick."`
}

// Batches: cancel, rerun, pause or resume every run matching a filter, as
// a tracked job.

// Batch actions.
const (
	BatchCancel = "cancel"
	BatchRerun  = "rerun"
	BatchPause  = "pause"
	BatchResume = "resume"
)

// Batch states.
const (
	BatchRunning = "running"
	BatchDone    = "done"
)

// BatchFilter says which runs a batch acts on. Every field set must
// match; at least one must be set.
type BatchFilter struct {
	Status        []RunStatus `json:"status,omitempty" nullable:"false" maxItems:"8" doc:"Runs in one of these statuses."`
	Workflow      string      `json:"workflow,omitempty" maxLength:"128" pattern:"^([A-Za-z0-9][A-Za-z0-9_.-]*)?$" doc:"Runs of this workflow."`
	StartedAfter  *time.Time  `json:"started_after,omitempty" doc:"Runs started at or after this time."`
	StartedBefore *time.Time  `json:"started_before,omitempty" doc:"Runs started before this time (and always before the batch was created: runs the batch itself starts never match)."`
}

// BatchRequest starts a batch.
type BatchRequest struct {
	Action string      `json:"action" enum:"cancel,rerun,pause,resume" doc:"cancel: cancel each matching running (or paused) run. rerun: rerun each matching ended run (reusing its completed steps), once, whatever happens to the batch. pause: pause each matching running run. resume: resume each matching paused run."`
	Filter BatchFilter `json:"filter"`
	Reason string      `json:"reason,omitempty" maxLength:"512" doc:"Recorded with each cancel."`
}

// Batch is a batch job and its progress.
type Batch struct {
	ID        string      `json:"id"`
	Action    string      `json:"action" enum:"cancel,rerun,pause,resume"`
	Filter    BatchFilter `json:"filter"`
	Reason    string      `json:"reason,omitempty"`
	State     string      `json:"state" enum:"running,done" doc:"running until every run of the listing was looked at."`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	EndedAt   *time.Time  `json:"ended_at,omitempty"`
	Scanned   int         `json:"scanned" doc:"Runs looked at."`
	Matched   int         `json:"matched" doc:"Runs that matched the filter."`
	Applied   int         `json:"applied" doc:"Runs cancelled, rerun, paused or resumed (a run already paused, or already running, counts)."`
	Skipped   int         `json:"skipped" doc:"Matching runs the action did not apply to (a cancel, pause or resume of a run that ended meanwhile, a rerun of a run still running)."`
	Failed    int         `json:"failed" doc:"Runs whose action failed for another reason (see errors)."`
	Errors    []string    `json:"errors" nullable:"false" doc:"The first errors, run by run."`
	// Cursor is where the listing goes on after the last page done: the
	// store's page token (flat layout), or "after:" and the id of the
	// page's last run (the sharded layout's merged listing).
	Cursor string `json:"cursor,omitempty" doc:"Where the batch goes on (opaque)."`
	Pages  int    `json:"pages" doc:"Pages of runs done."`
}

// Done reports whether every run was looked at.
func (b *Batch) Done() bool { return b.State == BatchDone }

// AttributesText is a run's search attributes for people, as the CLI and
// the dashboard show them: name=value by name, a string without its
// quotes unless it holds a space.
func AttributesText(attrs map[string]json.RawMessage) string {
	names := slices.Sorted(maps.Keys(attrs))
	parts := make([]string, len(names))
	for i, n := range names {
		v := string(attrs[n])
		if s, err := strconv.Unquote(v); err == nil && !strings.ContainsAny(s, " \t") {
			v = s
		}
		parts[i] = n + "=" + v
	}
	return strings.Join(parts, " ")
}
