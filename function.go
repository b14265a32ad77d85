package cairn

import (
	"encoding/json"
	"fmt"
	"time"
)

// A function step (KindFunction) runs a worker's code as a durable
// function: the body's operations — steps, sleeps, recorded values — are
// checkpointed in the step's history, and a new attempt of the step
// replays the body with the recorded results (docs/FUNCTIONS.md).

// OperationKind is what an operation of a function's body did.
type OperationKind string

// Operation kinds.
const (
	// OpStep ran a piece of code once, its result memoized.
	OpStep OperationKind = "step"
	// OpSleep waits until WakeAt; the driver's lease ends meanwhile.
	OpSleep OperationKind = "sleep"
	// OpValue recorded a value the body must see again on replay: the
	// time, a random number, a UUID.
	OpValue OperationKind = "value"
	// OpPatch recorded a patch marker (the code took the patched branch).
	OpPatch OperationKind = "patch"
	// OpWait waits for an event sent to the run, until WakeAt if set: a
	// started record, then the engine's completed one (the event's
	// payload), or the driver's failed one (class timeout).
	OpWait OperationKind = "wait"
	// OpInvoke ran another workflow: a started record, then the engine's
	// completed (the run's output) or failed one (its error).
	OpInvoke OperationKind = "invoke"
	// OpReply answers an update the function's wait took (its update):
	// the result is the answer (update.go).
	OpReply OperationKind = "reply"
)

// Values lists every operation kind (the API's enum).
func (OperationKind) Values() []OperationKind {
	return []OperationKind{OpStep, OpSleep, OpValue, OpPatch, OpWait, OpInvoke, OpReply}
}

// OperationStatus is how far an operation got.
type OperationStatus string

// Operation statuses.
const (
	// OpStarted: an at_most_once step's body is about to run; a replay
	// that finds no outcome after it does not run it again.
	OpStarted OperationStatus = "started"
	// OpCompleted: the operation ended with its result.
	OpCompleted OperationStatus = "completed"
	// OpFailed: the operation failed for good (a step whose retries ran out).
	OpFailed OperationStatus = "failed"
)

// Values lists every operation status (the API's enum).
func (OperationStatus) Values() []OperationStatus {
	return []OperationStatus{OpStarted, OpCompleted, OpFailed}
}

// Operation is one record of a function step's history.
type Operation struct {
	ID     string          `json:"id" minLength:"1" maxLength:"512" doc:"The operation's id: <scope>/<name>#<k>, k counting earlier uses of the name in the scope."`
	Seq    int             `json:"seq" minimum:"0" doc:"Its position in the history, from 0: a checkpoint's operations continue the history where it ends."`
	Kind   OperationKind   `json:"kind"`
	Status OperationStatus `json:"status"`
	Result json.RawMessage `json:"result,omitempty" doc:"A completed operation's result, any JSON."`
	Error  *ErrorInfo      `json:"error,omitempty" doc:"A failed operation's error."`
	WakeAt *time.Time      `json:"wake_at,omitempty" doc:"A sleep's end."`
	At     time.Time       `json:"at,omitempty" doc:"When the engine recorded it (set by the engine)."`
	Update string          `json:"update,omitempty" maxLength:"128" doc:"A wait's: the id of the update it took (set by the engine). A reply's: the id of the update it answers."`
}

// ClassNondeterminism: a function's body, replayed, reached operations
// other than those its history records (docs/FUNCTIONS.md). Not retried.
const ClassNondeterminism = "nondeterminism"

// MaxOperations is how many operations a function step's history holds;
// a checkpoint past it is refused (continue in a new run).
const MaxOperations = 10_000

// ContinueAsNew is the new run a function's run continues as.
type ContinueAsNew struct {
	Input json.RawMessage `json:"input,omitempty" doc:"The new run's input."`
}

// CheckpointRequest records a function step's operations.
type CheckpointRequest struct {
	Operations []Operation `json:"operations" nullable:"false" maxItems:"1000" doc:"Operations to add to the step's history, in order: each one's seq continues the history (an operation already recorded at its seq is skipped, so a checkpoint sent again adds nothing)."`
	Usage      *Usage      `json:"usage,omitempty" doc:"With suspend: what the attempt consumed, priced and added to the step's usage as a complete's or a fail's is (an attempt that suspends reports no other way)."`
	Suspend    *Suspension `json:"suspend,omitempty" doc:"End this attempt once the operations are recorded: the step's next attempt, which replays the history, becomes claimable at until, or when event arrives (the engine then records it as op's outcome), whichever is first."`
}

// Suspension is when a suspended function goes on.
type Suspension struct {
	Until *time.Time `json:"until,omitempty" doc:"When the next attempt becomes claimable (a sleep's end, a wait's timeout; a time past is now). Required without op."`
	Event string     `json:"event,omitempty" maxLength:"256" doc:"An event sent to the run that makes the next attempt claimable at once, recorded as op's outcome (its payload the result)."`
	Op    string     `json:"op,omitempty" maxLength:"512" doc:"With event or invoke: the id of the operation the event or the run's end completes."`
	// Invoke starts a run of another workflow for the function.
	Invoke *Invocation `json:"invoke,omitempty" doc:"Start a run of another workflow (once per op) and make the next attempt claimable when it ends, its output (or error) recorded as op's outcome."`
}

// Check refuses a suspension of the wrong shape (it needs until, or op
// with one of event and invoke) or whose invoke's input is over max
// bytes. A nil suspension is fine.
func (sp *Suspension) Check(max int) error {
	switch {
	case sp == nil:
	case sp.Event != "" && sp.Invoke != nil || (sp.Event != "" || sp.Invoke != nil) != (sp.Op != "") || sp.Until == nil && sp.Op == "":
		return ValidationError{{Field: "body.suspend", Message: "needs until, or op with one of event (a wait; until its timeout) and invoke"}}
	case sp.Invoke != nil && len(sp.Invoke.Input) > max:
		return ValidationError{{Field: "body.suspend.invoke.input", Message: fmt.Sprintf("%d bytes, over the %d-byte limit", len(sp.Invoke.Input), max)}}
	}
	return nil
}

// Awaits is the kind of operation a suspension waits for (with op).
func (sp *Suspension) Awaits() OperationKind {
	if sp.Invoke != nil {
		return OpInvoke
	}
	return OpWait
}

// Invocation is a run a function starts and waits for.
type Invocation struct {
	Workflow string          `json:"workflow" minLength:"1" maxLength:"128" doc:"The workflow to run (a DAG or a function, served by any worker)."`
	Version  string          `json:"version,omitempty" maxLength:"64" doc:"Its version; the newest when the run starts if empty."`
	Input    json.RawMessage `json:"input,omitempty" doc:"The run's input."`
}

// Checkpointed answers a checkpoint.
type Checkpointed struct {
	Operations int       `json:"operations" doc:"The history's length now."`
	RunStatus  RunStatus `json:"run_status"`
}
