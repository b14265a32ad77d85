package engine

import (
	"encoding/json"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/attrs"
	"github.com/cairn-dev/cairn/engine/internal/audit"
	"github.com/cairn-dev/cairn/engine/internal/catalog"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/lease"
	"github.com/cairn-dev/cairn/engine/internal/update"
	"github.com/cairn-dev/cairn/engine/internal/workers"
)

// runRecord is the stored run: everything about one run but its leases.
// It changes only by compare-and-swap, through the committer.
type runRecord struct {
	ID             string                     `json:"id"`
	Workflow       string                     `json:"workflow"`
	Version        string                     `json:"version"`
	Status         cairn.RunStatus            `json:"status"`
	Input          json.RawMessage            `json:"input,omitempty"`
	State          map[string]json.RawMessage `json:"state"`
	Correlation    string                     `json:"correlation,omitempty"`
	IdempotencyKey string                     `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time                  `json:"created_at"`
	UpdatedAt      time.Time                  `json:"updated_at"`
	EndedAt        *time.Time                 `json:"ended_at,omitempty"`
	Deadline       *time.Time                 `json:"deadline,omitempty"`
	Budget         *cairn.Budget              `json:"budget,omitempty"`
	Steps          map[string]*stepState      `json:"steps"`
	Events         []eventRecord              `json:"events,omitempty"`
	Updates        update.Log                 `json:"updates,omitempty"` // updates.go
	Output         json.RawMessage            `json:"output,omitempty"`
	Error          *cairn.ErrorInfo           `json:"error,omitempty"`
	Usage          cairn.Usage                `json:"usage"`
	Journal        []cairn.JournalEntry       `json:"journal"`
	// RerunOf is the run this one was started from by a rerun.
	RerunOf string `json:"rerun_of,omitempty"`
	// Event is the published event that started the run (events.go).
	Event *cairn.EventRef `json:"event,omitempty"`
	// Def is the sum of the definition the run started on, when a
	// definition may be replaced (Config.ReplaceDefinitions): see rev.
	Def string `json:"def,omitempty"`
	// ContinuedAs and ContinuedFrom link a function's runs that continued
	// as new (function.go).
	ContinuedAs   string `json:"continued_as,omitempty"`
	ContinuedFrom string `json:"continued_from,omitempty"`
	// Priority is the run's priority (priority.go).
	Priority int `json:"priority,omitempty"`
	// Attrs are the run's search attributes (engine/internal/attrs).
	Attrs attrs.Set `json:"attrs,omitempty"`
	// Compensation is the run's on_failure steps and how they went
	// (compensate.go).
	Compensation *compState `json:"compensation,omitempty"`
	// Parent is the run whose child step started this one (child.go).
	Parent *parentLink `json:"parent,omitempty"`
	// Rev counts the record's committed writes.
	Rev int64 `json:"rev"`
	// TimerAt is the due time of the newest timer a commit armed for the
	// run. A commit whose next wake-up is earlier (a sleep, a wait
	// timeout, a retry backoff, a deadline), or that finds this one spent,
	// arms a new timer before it writes. See armTimer.
	TimerAt *time.Time `json:"timer_at,omitempty"`
	// Trace is the traceparent of the span that started the run (the
	// caller's, or the API's server span), "" when none: the run's span
	// is its child and the run's trace is its trace (package telemetry).
	Trace string `json:"trace,omitempty"`
	// Layout is the key layout of the run's record and leases ("" flat,
	// KeyLayoutSharded), fixed when the run starts (layout.go).
	Layout string        `json:"layout,omitempty"`
	Reads  []audit.Entry `json:"reads,omitempty"` // reads held for the run's end, recorded by its ending commit (engine/internal/audit)

	// fromCache marks a copy a claim took from the committer's cache
	// (claimRun): never stored; a render error on it is decided again on
	// a fresh read before the step is failed.
	fromCache bool
}

// stepState is one step of a run record.
type stepState struct {
	Status cairn.StepStatus `json:"status"`
	// Attempt is the current attempt number of a task step: the lease key
	// a claimer must create is leases/<run>/<step>/<Attempt>.
	Attempt int `json:"attempt,omitempty"`
	// Failures is the retry budget spent.
	Failures int `json:"failures,omitempty"`
	// Lost counts leases that expired unanswered (deliveries).
	Lost int `json:"lost,omitempty"`
	// ReadyAt is when the current attempt becomes claimable.
	ReadyAt *time.Time `json:"ready_at,omitempty"`
	// WakeAt is when a sleep ends or a wait times out.
	WakeAt      *time.Time           `json:"wake_at,omitempty"`
	Output      json.RawMessage      `json:"output,omitempty"`
	Error       *cairn.ErrorInfo     `json:"error,omitempty"`
	CompletedBy int                  `json:"completed_by,omitempty"`
	Avoid       map[string]time.Time `json:"avoid,omitempty"`
	// CacheKey is the key digest of a cached step that missed (its complete
	// writes the entry); Cached the entry a hit took (resultcache.go).
	CacheKey string          `json:"cache_key,omitempty"`
	Cached   *cairn.CacheHit `json:"cached,omitempty"`
	Usage    cairn.Usage     `json:"usage"`
	Attempts []cairn.Attempt `json:"attempts,omitempty"`
	// Map is a map step's progress (mapstep.go).
	Map *mapState `json:"map,omitempty"`
	// Child is a child step's child run (child.go).
	Child *childState `json:"child,omitempty"`
	// Ops is a function step's history (function.go).
	Ops []cairn.Operation `json:"ops,omitempty"`
	// Wait is the event a suspended function step waits for (function.go).
	Wait *funcWait `json:"wait,omitempty"`
	// Interrupt and Resume are the payload the body last interrupted
	// with and the value it was resumed with (interrupt.go).
	Interrupt json.RawMessage `json:"interrupt,omitempty"`
	Resume    json.RawMessage `json:"resume,omitempty"`
	// Loops counts the loops that sent the run back over the step (loop.go).
	Loops int `json:"loops,omitempty"`
	// Lease is the lease of an attempt recorded in the record by the
	// commit that made the attempt ready (inline.go): live while that
	// attempt is the step's current one and the step is ready; kept after
	// for the attempt's input view until a later one replaces it.
	Lease *inlineLease `json:"lease,omitempty"`
}

// visits is how many times the step started (or was skipped).
func (s *stepState) visits() int {
	if s.Status == cairn.StepPending {
		return s.Loops
	}
	return s.Loops + 1
}

func (s *stepState) attempt(n int) *cairn.Attempt {
	for i := range s.Attempts {
		if s.Attempts[i].N == n {
			return &s.Attempts[i]
		}
	}
	s.Attempts = append(s.Attempts, cairn.Attempt{N: n})
	return &s.Attempts[len(s.Attempts)-1]
}

type eventRecord struct {
	Name       string          `json:"name"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	ReceivedAt time.Time       `json:"received_at"`
	ID         string          `json:"id,omitempty"`
	Update     string          `json:"update,omitempty"` // the update's id, when it is one (updates.go)
}

// The lease objects and their states (engine/internal/lease).
type (
	leaseRecord = lease.Record
	leaseDone   = lease.Done // a deferred complete's outcome (deferred.go)
	inlineLease = lease.Inline
)

const (
	leaseActive    = lease.Active
	leaseExpired   = lease.Expired
	leaseCompleted = lease.Completed
)

// rev is the version a run's definition is read as: the revision it
// started on (catalog.Revision), which a replaced definition keeps.
func (r *runRecord) rev() string { return catalog.Revision(r.Version, r.Def) }

// leaseToken is what a lease id encodes (keys.LeaseToken): nothing in it
// is believed until the lease object confirms it (lease.Record.Matches).
type leaseToken = keys.LeaseToken

// leaseArg parses the lease id of a worker call, once per call: what
// follows takes the token. A malformed id is the caller's error.
func leaseArg(id string) (leaseToken, error) {
	tok, err := keys.ParseLease(id)
	if err != nil {
		return tok, &InvalidError{Field: "lease", Message: "malformed lease id"}
	}
	return tok, nil
}

type (
	workflowID   = workers.WorkflowID // a definition's name and version
	cachedWorker = workers.Cached     // a worker record as claims use it
)
