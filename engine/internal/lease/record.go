// Package lease is the engine's lease objects: the stored lease of one
// attempt and the lease an attempt may have in its run record instead
// (engine/inline.go), the create-only write that settles an outcome it
// could not learn, the writes that follow, and one instance's cache of the
// leases it wrote. It decides nothing: when a lease is made, fenced or
// trusted is the engine's state machine (engine/claim.go, steps.go).
package lease

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/catalog"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Lease states.
const (
	Active  = "active"
	Expired = "expired"
	// Completed: a deferred complete (engine/deferred.go) is durable in
	// the lease (Done) and not yet folded into the run record.
	Completed = "completed"
)

// Record is the stored lease of one attempt: created once by the
// claimer that wins it, then changed by compare-and-swap (started,
// heartbeat, expiry by the reaper).
type Record struct {
	Run         string         `json:"run"`
	Step        string         `json:"step"`
	Attempt     int            `json:"attempt"`
	Worker      string         `json:"worker"`
	Workflow    string         `json:"workflow"`
	Version     string         `json:"version"`
	Delivery    cairn.Delivery `json:"delivery"`
	State       string         `json:"state"`
	ClaimedAt   time.Time      `json:"claimed_at"`
	ExpiresAt   time.Time      `json:"expires_at"`
	StartedAt   *time.Time     `json:"started_at,omitempty"`
	TimeoutAt   *time.Time     `json:"timeout_at,omitempty"`
	ExpiredWhy  string         `json:"expired_why,omitempty"`
	TraceParent string         `json:"traceparent,omitempty"`
	Def         string         `json:"def,omitempty"` // the run's Def
	// Input is the rendered input the lease gave its worker, kept when
	// it is at most engine.KeptInputBytes (InputBytes is its size either way):
	// what the dashboard and GET /runs/{run}/steps/{step}/input show.
	Input      json.RawMessage `json:"input,omitempty"`
	InputBytes int             `json:"input_bytes,omitempty"`
	// Nonce is the lease's secret: 128 random bits, also in the lease id.
	// A worker call is believed only when the id's nonce matches the
	// stored one, so an id cannot be made up or edited into another.
	Nonce string `json:"nonce"`

	Key string `json:"-"` // where it was read (either layout; see engine/layout.go)
	// Inline: the lease lives in the run record (engine/inline.go), no
	// object holds it yet; its first write creates the object.
	Inline bool `json:"-"`
	// Done is a deferred complete's outcome, set with Completed.
	Done *Done `json:"done,omitempty"`
	// Slots are the concurrency limit objects this attempt holds a slot
	// in (engine/limits.go): freed when the attempt ends.
	Slots []string `json:"slots,omitempty"`
}

// Done is a deferred complete's outcome, kept in the lease.
type Done struct {
	Output     json.RawMessage            `json:"output"`
	StatePatch map[string]json.RawMessage `json:"state_patch,omitempty"`
	Usage      *cairn.Usage               `json:"usage,omitempty"` // priced
	Summary    json.RawMessage            `json:"summary,omitempty"`
	At         time.Time                  `json:"at"`
}

// Rev is the version the lease's definition is read as (catalog.Revision).
func (l *Record) Rev() string { return catalog.Revision(l.Version, l.Def) }

// KeyIn is where l lives: where it was read, else its key in the layout k
// writes.
func (l *Record) KeyIn(k keys.Layout) string {
	if l.Key != "" {
		return l.Key
	}
	return k.Lease(l.Run, l.Step, l.Attempt)
}

// Matches reports whether l is the stored lease tok names.
func (l *Record) Matches(tok keys.LeaseToken) bool {
	return tok.Matches(l.Run, l.Step, l.Attempt, l.Worker, l.ClaimedAt, l.Nonce)
}

// Holder is who holds l, as a run's view shows it.
func (l *Record) Holder() *cairn.Holder {
	return &cairn.Holder{Worker: l.Worker, ClaimedAt: l.ClaimedAt, StartedAt: l.StartedAt, ExpiresAt: l.ExpiresAt}
}

// Inline is a lease recorded in the run record (engine/inline.go).
type Inline struct {
	Attempt   int        `json:"attempt"`
	Worker    string     `json:"worker"`
	ClaimedAt time.Time  `json:"claimed_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`
	Nonce     string     `json:"nonce"`
	// Input is the rendered input, kept when at most InlineKeptInputBytes
	// (InputBytes is its size either way): the record is rewritten by
	// every commit, so it keeps less than a lease object does.
	Input      json.RawMessage `json:"input,omitempty"`
	InputBytes int             `json:"input_bytes,omitempty"`
}

// InlineKeptInputBytes is the largest rendered input an inline lease
// keeps for StepInput (a lease object keeps up to engine.KeptInputBytes).
const InlineKeptInputBytes = 1 << 10

// InlineVersion is the version the lease cache holds for an inline lease:
// no store makes it, so a write against it is never a swap (see
// Objects.Write).
const InlineVersion blob.Version = "\x00inline"

// TimedOut reports whether the attempt of l is past its timeout at now.
func (l *Record) TimedOut(now time.Time) bool {
	return l.TimeoutAt != nil && !now.Before(*l.TimeoutAt)
}

// Lapsed reports whether l's heartbeats stopped long enough for the
// reaper to recover it: past its expiry and the recovery window. From
// then on its worker's calls are refused whether or not a reaper pass
// came by: expired means expired, not "until the next visit"
// (TestLapsedLeaseRefusesHeartbeat).
func (l *Record) Lapsed(now time.Time, window time.Duration) bool {
	return !now.Before(l.ExpiresAt.Add(window))
}

// Verdict says why a lease that is not completed is to be reclaimed at
// now ("timeout", "expired", or the reason an earlier pass fenced it
// with), or "" and when it will be (zero when it is not active); window
// is the recovery window after its expiry.
func (l *Record) Verdict(now time.Time, window time.Duration) (why string, at time.Time) {
	switch {
	case l.State == Expired:
		return l.ExpiredWhy, time.Time{} // an earlier pass died between the two writes
	case l.TimedOut(now):
		return "timeout", time.Time{}
	case l.Lapsed(now, window):
		return "expired", time.Time{}
	case l.State != Active:
		return "", time.Time{}
	}
	at = l.ExpiresAt.Add(window)
	if l.TimeoutAt != nil && l.TimeoutAt.Before(at) {
		at = *l.TimeoutAt
	}
	return "", at
}

// Answer is the lease a claim hands its worker for l: step is the
// definition's step (a map item's map step), steps the outputs its input
// rendered from, state the run's state (copied: the lease's own).
func (l *Record) Answer(step string, input json.RawMessage, steps, state map[string]json.RawMessage, correlation string, heartbeat, ttl time.Duration) *cairn.Lease {
	tok := keys.LeaseToken{Run: l.Run, Step: l.Step, Attempt: l.Attempt, Worker: l.Worker, ClaimedAt: l.ClaimedAt.UnixMilli(), Nonce: l.Nonce}
	state = maps.Clone(state)
	if state == nil {
		state = map[string]json.RawMessage{}
	}
	return &cairn.Lease{
		ID: tok.ID(), Run: l.Run, Workflow: l.Workflow, Version: l.Version, Step: step, Attempt: l.Attempt,
		Delivery: l.Delivery, Input: input, Steps: steps, State: state, Correlation: correlation,
		IdempotencyKey: l.Run + ":" + l.Step, TraceParent: l.TraceParent, ExpiresAt: l.ExpiresAt, TimeoutAt: l.TimeoutAt,
		HeartbeatMs: heartbeat.Milliseconds(), LeaseTTLMs: ttl.Milliseconds(),
	}
}

// Run is what an inline lease's record takes from its run record.
type Run struct {
	ID, Workflow, Version, Def string
	TraceParent                func(step string, attempt int) string
}

// FromInline is the lease record of step's inline lease il in run, as
// its object at key would hold it.
func FromInline(run Run, step string, il *Inline, key string) *Record {
	return &Record{
		Run: run.ID, Step: step, Attempt: il.Attempt, Worker: il.Worker, Workflow: run.Workflow, Version: run.Version, Def: run.Def,
		Delivery: cairn.AtLeastOnce, State: Active, ClaimedAt: il.ClaimedAt, ExpiresAt: il.ExpiresAt, TimeoutAt: il.TimeoutAt,
		TraceParent: run.TraceParent(step, il.Attempt), Nonce: il.Nonce,
		Input: il.Input, InputBytes: il.InputBytes, Inline: true, Key: key,
	}
}
