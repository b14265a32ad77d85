package cairn

import (
	"encoding/json"
	"fmt"
	"time"
)

// The bodies of the API's requests and answers that the engine takes and
// gives as they are: the worker protocol (register, claim, started,
// heartbeat, complete, fail), starting a run, events and reruns. A
// function step's checkpoint is in function.go.

// RegisterRequest announces a worker and the definitions it serves.
type RegisterRequest struct {
	WorkerID  string            `json:"worker_id,omitempty" maxLength:"128" pattern:"^([A-Za-z0-9][A-Za-z0-9_.:@-]*)?$" doc:"Stable id of the worker process (the SDKs derive it from host and pid). When absent or empty the server generates one and returns it: use that id for claims."`
	Workflows []Workflow        `json:"workflows" nullable:"false" maxItems:"100" doc:"Definitions the worker serves. Each (name, version) is stored once and immutable."`
	Labels    map[string]string `json:"labels,omitempty" doc:"Free labels shown by cairn workers."`
}

// RegisterResponse carries the two numbers the protocol runs on.
type RegisterResponse struct {
	WorkerID    string `json:"worker_id" doc:"The worker's id: the one registered, or the one generated for a worker that gave none. Claims name it."`
	LeaseTTLMs  int64  `json:"lease_ttl_ms" doc:"A lease expires this long after its claim or last heartbeat."`
	HeartbeatMs int64  `json:"heartbeat_ms" doc:"Send a heartbeat for every running lease this often."`
	MaxHoldMs   int64  `json:"max_hold_ms" doc:"The longest a claim is held open."`
}

// ClaimRequest asks for runnable steps.
type ClaimRequest struct {
	WorkerID string `json:"worker_id" minLength:"1" maxLength:"128" doc:"The id the worker registered with."`
	Max      int    `json:"max,omitempty" minimum:"0" maximum:"100" doc:"Most leases to return (default 1)."`
	WaitMs   int64  `json:"wait_ms,omitempty" minimum:"0" maximum:"3600000" doc:"Hold the request up to this long while nothing is ready; capped by the server's claim hold (at most 4/5 of its max request time; CAIRN_CLAIM_HOLD). 0 answers at once."`
	Run      string `json:"run,omitempty" maxLength:"64" doc:"Only claim steps of this run (a script driving its own run)."`
}

// Lease is one attempt handed to one worker for a bounded time.
type Lease struct {
	ID             string                     `json:"id" doc:"Opaque lease id for started, heartbeat, complete and fail."`
	Run            string                     `json:"run"`
	Workflow       string                     `json:"workflow"`
	Version        string                     `json:"version"`
	Step           string                     `json:"step"`
	Attempt        int                        `json:"attempt" doc:"Attempt number, from 1."`
	Delivery       Delivery                   `json:"delivery"`
	Input          json.RawMessage            `json:"input" doc:"The step's rendered input."`
	Steps          map[string]json.RawMessage `json:"steps" doc:"Outputs of the steps this one depends on (transitively), by step id."`
	State          map[string]json.RawMessage `json:"state" doc:"The run state when the lease was made."`
	Correlation    string                     `json:"correlation,omitempty"`
	IdempotencyKey string                     `json:"idempotency_key" doc:"Stable across every attempt of this step of this run: pass it to side-effecting calls."`
	TraceParent    string                     `json:"traceparent" doc:"W3C traceparent of the step span the engine opened."`
	ExpiresAt      time.Time                  `json:"expires_at" doc:"The lease expires then unless a heartbeat extends it."`
	TimeoutAt      *time.Time                 `json:"timeout_at,omitempty" doc:"The attempt fails with class timeout then, heartbeats or not."`
	HeartbeatMs    int64                      `json:"heartbeat_ms"`
	LeaseTTLMs     int64                      `json:"lease_ttl_ms"`
	Item           *int                       `json:"item,omitempty" doc:"For an item of a map step (step names the map step): the item's index in the items array."`
	History        []Operation                `json:"history,omitempty" nullable:"false" doc:"For a function step: the operations its body checkpointed in earlier attempts, in order; replay returns their results."`
	Resumed        bool                       `json:"resumed,omitempty" doc:"The step was interrupted and resumed: resume holds the value it was resumed with, interrupt the payload it interrupted with (on every attempt until it completes or interrupts again)."`
	Resume         json.RawMessage            `json:"resume,omitempty" doc:"With resumed: the value the step was resumed with."`
	Interrupt      json.RawMessage            `json:"interrupt,omitempty" doc:"With resumed: the payload the step last interrupted with."`
}

// LeaseStatus answers started and heartbeat.
type LeaseStatus struct {
	ExpiresAt time.Time `json:"expires_at" doc:"The lease now expires then."`
}

// HeartbeatResult is one lease's answer in a batched heartbeat.
type HeartbeatResult struct {
	Lease     string     `json:"lease"`
	ExpiresAt *time.Time `json:"expires_at,omitempty" doc:"Set when the lease was extended."`
	Reason    Reason     `json:"reason,omitempty" doc:"Set when the heartbeat was refused: cancel that body (already_applied, fenced, run_terminal or not_started)."`
	Error     string     `json:"error,omitempty" doc:"Set when the heartbeat failed for another reason (retry it)."`
}

// CompleteRequest ends a step with its output.
type CompleteRequest struct {
	Output     json.RawMessage            `json:"output,omitempty" doc:"The step's output, any JSON."`
	StatePatch map[string]json.RawMessage `json:"state_patch,omitempty" doc:"Merged into the run state: top-level keys replace."`
	Attributes map[string]json.RawMessage `json:"attributes,omitempty" doc:"Sets the run's search attributes (as at start); null removes one."`
	Usage      *Usage                     `json:"usage,omitempty" doc:"What the attempt consumed; tokens are priced by the engine's price book."`
	Summary    json.RawMessage            `json:"summary,omitempty" doc:"A short summary of the attempt (any JSON, at most 4 KiB), recorded on the attempt for timelines and audits and never read by the flow."`
	// ClaimNext asks for eager dispatch: once the complete is applied,
	// claim up to Max leases for the lease's worker without holding, and
	// return them with the answer, so a busy worker does one call per step.
	// ContinueAsNew ends a function's run by starting a fresh one.
	ContinueAsNew *ContinueAsNew `json:"continue_as_new,omitempty" doc:"A function step only, without output or claim_next: the run completes, with output {\"continued_as\": <id>}, by starting a new run of its workflow version with this input, its search attributes and an empty history (once: a retry, or the next attempt's replay, gets the same run). A run a parent started cannot continue as new."`
	ClaimNext     *ClaimNext     `json:"claim_next,omitempty" doc:"Eager dispatch: once the complete is applied, claim up to max more leases for this lease's worker (never held: none ready answers none) and return them in leases. Leave it out to claim separately."`
}

// ClaimNext is a complete's eager claim.
type ClaimNext struct {
	Max int `json:"max" minimum:"1" maximum:"100" doc:"Most leases to return with the answer: the worker's slots this step frees (usually 1)."`
}

// FailRequest ends an attempt with an error.
type FailRequest struct {
	Error      ErrorInfo                  `json:"error" doc:"class decides retry: retryable, fatal, unservable, or a typed class."`
	StatePatch map[string]json.RawMessage `json:"state_patch,omitempty" doc:"Merged into the run state even on failure."`
	Usage      *Usage                     `json:"usage,omitempty"`
	Summary    json.RawMessage            `json:"summary,omitempty" doc:"A short summary of the attempt (any JSON, at most 4 KiB), recorded on the attempt: what it did before it failed."`
}

// InterruptRequest ends an attempt by interrupting its step: the step
// waits, with the payload, for someone to resume it.
type InterruptRequest struct {
	Payload    json.RawMessage            `json:"payload,omitempty" doc:"What to show whoever resumes the step (a question, a draft to approve): any JSON, at most 64 KiB. Kept in the run record as sent (not encrypted)."`
	StatePatch map[string]json.RawMessage `json:"state_patch,omitempty" doc:"Merged into the run state, as a complete's."`
	Usage      *Usage                     `json:"usage,omitempty" doc:"What the attempt consumed: priced and counted against the run's budget like any attempt's."`
	Summary    json.RawMessage            `json:"summary,omitempty" doc:"A short summary of the attempt (any JSON, at most 4 KiB)."`
}

// ResumeStepRequest resumes an interrupted step.
type ResumeStepRequest struct {
	Value json.RawMessage `json:"value,omitempty" doc:"The answer: any JSON, at most 64 KiB, handed to the step's next attempt as resume (null when absent). Kept in the run record as sent (not encrypted)."`
}

// MaxInterruptBytes bounds an interrupt's payload and a resume's value:
// both live in the run record.
const MaxInterruptBytes = 64 << 10

// CheckInterrupt refuses an interrupt payload or resume value (field)
// that is not JSON or is over MaxInterruptBytes, and makes an absent one
// null.
func CheckInterrupt(field string, v *json.RawMessage) error {
	switch {
	case len(*v) == 0:
		*v = json.RawMessage("null")
	case len(*v) > MaxInterruptBytes:
		return ValidationError{{Field: field, Message: fmt.Sprintf("%d bytes, over the %d-byte limit", len(*v), MaxInterruptBytes)}}
	case !json.Valid(*v):
		return ValidationError{{Field: field, Message: "not valid JSON"}}
	}
	return nil
}

// Check checks an interrupt's payload and summary (the payload null when
// absent).
func (r *InterruptRequest) Check() error {
	if err := CheckInterrupt("payload", &r.Payload); err != nil {
		return err
	}
	return CheckSummary(r.Summary)
}

// MaxSummaryBytes bounds an attempt's summary.
const MaxSummaryBytes = 4 << 10

// CheckSummary refuses a summary over MaxSummaryBytes.
func CheckSummary(s json.RawMessage) error {
	if len(s) > MaxSummaryBytes {
		return ValidationError{{Field: "summary", Message: fmt.Sprintf("%d bytes, over the %d-byte limit of a summary", len(s), MaxSummaryBytes)}}
	}
	return nil
}

// Ended answers complete and fail.
type Ended struct {
	RunStatus RunStatus `json:"run_status" doc:"The run's status after this call."`
	Leases    []Lease   `json:"leases,omitempty" nullable:"false" doc:"With claim_next: the leases claimed for the worker after the complete was applied, as a claim answers them (none when nothing was ready). Run them like a claim's."`
}

// StartRequest starts a run.
type StartRequest struct {
	Workflow       string                     `json:"workflow" minLength:"1" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Workflow name."`
	Version        string                     `json:"version,omitempty" maxLength:"64" pattern:"^([A-Za-z0-9][A-Za-z0-9_.+-]*)?$" doc:"Version to run; default the newest registered."`
	Input          json.RawMessage            `json:"input,omitempty" doc:"The run's input, any JSON value."`
	Correlation    string                     `json:"correlation,omitempty" maxLength:"256" doc:"Free correlation id, visible to templates as run.correlation."`
	IdempotencyKey string                     `json:"idempotency_key,omitempty" maxLength:"256" doc:"Starting twice with the same key (per workflow) returns the first run."`
	Deadline       *time.Time                 `json:"deadline,omitempty" doc:"The run times out at this time (default: the workflow's deadline, if any)."`
	State          map[string]json.RawMessage `json:"state,omitempty" doc:"Initial run state."`
	Priority       int                        `json:"priority,omitempty" minimum:"-100" maximum:"100" doc:"The run's priority (default 0): of the steps ready at once, higher priorities are offered first; a step's own priority overrides it. A step that waits gains one point per second (engine PriorityAging), so none starves."`
	Budget         *Budget                    `json:"budget,omitempty" doc:"The run's budget (default: the workflow's): a run whose usage goes over it fails with class budget_exceeded."`
	Attributes     map[string]json.RawMessage `json:"attributes,omitempty" doc:"Search attributes: name to a string, number, boolean or RFC 3339 time (at most 16; names a letter then letters, digits, _ . -; strings at most 256 bytes). GET /runs filters on them (attr)."`
}

// EventRequest sends an event to a run.
type EventRequest struct {
	Name    string          `json:"name" minLength:"1" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"Event name; resumes wait steps waiting for it. Any text without control characters."`
	Payload json.RawMessage `json:"payload,omitempty" doc:"Any JSON: the output of the wait step it resumes."`
	ID      string          `json:"id,omitempty" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"Optional event id: an event whose id the run has seen is ignored (safe retries). Any text without control characters."`
}

// RerunRequest starts a new run from an ended one.
type RerunRequest struct {
	FromStep       string `json:"from_step,omitempty" maxLength:"64" pattern:"^([A-Za-z][A-Za-z0-9_-]*)?$" doc:"Run this step and every step after it again; every other step that completed in the old run is reused with its output. Empty: reuse every completed step, run the rest (a retry of what failed)."`
	IdempotencyKey string `json:"idempotency_key,omitempty" maxLength:"256" doc:"Rerunning twice with the same key (per workflow) returns the first rerun."`
}
