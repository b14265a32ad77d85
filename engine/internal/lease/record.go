// Package lease is the engine's lease objects: the stored lease of one
// attempt and the lease an attempt may have in its run record instead
// (engine/inline.go), the create-only write that settles an outcome it
// could not learn, the writes that follow, and one instance's cache of the
// leases it wrote. It decides nothing: when a lease is made, fenced or
// trusted is the engine's state machine (engine/claim.go, steps.go).
package lease

import (
	"encoding/json"
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
