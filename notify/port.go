package notify

import (
	"context"
	"encoding/json"
	"time"
)

// The notification port: what the engine publishes and subscribes to.
// Drivers (mem, nats, sqs, gcppubsub, faults) implement Bus; the engine
// (engine.Config.Bus) uses it. The port lives here, at the leaf, so
// transports do not import the engine.

// Hint says that an attempt may be claimable: a notification, never a
// fact. The bucket decides; a duplicated, stale or lost hint never loses
// or duplicates work.
//
// A hint with Changed set is a run-change notice instead: the run's record
// was written at revision Rev, and instances wake the status requests
// waiting on it. It names no step or attempt and is never claimable work.
type Hint struct {
	Run      string `json:"run"`
	Workflow string `json:"workflow"`
	Version  string `json:"version"`
	Step     string `json:"step"`
	Attempt  int    `json:"attempt"`
	// NotBefore delays a hint for an attempt whose retry backoff has not
	// elapsed.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Taken says the attempt was claimed: instances drop their copies of
	// the hint instead of spending a read (and a refused create) on it.
	Taken bool `json:"taken,omitempty"`
	// Changed marks a run-change notice: the run's record now has
	// revision Rev. Step and Attempt are empty; it is not work.
	Changed bool `json:"changed,omitempty"`
	// Rev is the run record's revision a change notice announces.
	Rev int64 `json:"rev,omitempty"`
	// Priority is the step's effective priority (the run's, or the
	// step's override): an instance offers higher ones first.
	Priority int `json:"priority,omitempty"`
	// Registered marks a registration notice instead: a new version of
	// the workflow named here was registered, and instances forget the
	// newest version they cached for it. Run, Workflow and Step are
	// empty; it is not work.
	Registered string `json:"registered,omitempty"`
	// Progress marks a progress notice instead: a step's progress value
	// for the run's watchers. Run, Workflow and Step are empty (an
	// instance that predates progress notices takes it for a hint of no
	// workflow, which no claim takes); it is not work.
	Progress *Progress `json:"progress,omitempty"`
}

// Progress is a step body's progress message: a JSON value for the
// watchers of its run, never stored. Origin and Seq name the instance
// that accepted it and its count there, so that instance, which delivered
// it to its own watchers at once, ignores its own copy from the bus.
type Progress struct {
	Run     string          `json:"run"`
	Step    string          `json:"step"`
	Attempt int             `json:"attempt"`
	Value   json.RawMessage `json:"value"`
	At      time.Time       `json:"at"`
	Origin  string          `json:"origin,omitempty"`
	Seq     uint64          `json:"seq,omitempty"`
}

// Kind is what a message on the bus says. The wire format tells the kinds
// apart by their fields (Changed, Registered, Taken); Kind names them.
type Kind string

// The kinds of message.
const (
	// KindReady: an attempt is ready to be claimed (at NotBefore when set).
	KindReady Kind = "ready"
	// KindTaken: an attempt was claimed; instances drop their copies.
	KindTaken Kind = "taken"
	// KindChanged: a run's record reached revision Rev; not work.
	KindChanged Kind = "changed"
	// KindRegistered: a workflow has a new version; not work.
	KindRegistered Kind = "registered"
	// KindProgress: a step's progress value for its run's watchers; not
	// work.
	KindProgress Kind = "progress"
)

// Kind is the kind of message h is.
func (h Hint) Kind() Kind {
	switch {
	case h.Progress != nil:
		return KindProgress
	case h.Registered != "":
		return KindRegistered
	case h.Changed:
		return KindChanged
	case h.Taken:
		return KindTaken
	}
	return KindReady
}

// Work reports whether h is about an attempt (ready, or taken): what a
// hub of claims keeps.
func (h Hint) Work() bool { k := h.Kind(); return k == KindReady || k == KindTaken }

// ChangeNotice says run's record reached revision rev.
func ChangeNotice(run string, rev int64) Hint { return Hint{Run: run, Changed: true, Rev: rev} }

// RegistrationNotice says workflow has a new version.
func RegistrationNotice(workflow string) Hint { return Hint{Registered: workflow} }

// ProgressNotice carries p to the other instances.
func ProgressNotice(p Progress) Hint { return Hint{Progress: &p} }

// Key identifies the step a hint is about: of two hints with one key, the
// newer attempt wins.
func (h Hint) Key() string { return h.Run + "/" + h.Step }

// Bus carries hints between engine instances (NATS, SQS, Pub/Sub, or
// in-process). Publish sends; Subscribe delivers every received hint to fn
// until the returned stop is called.
type Bus interface {
	Publish(ctx context.Context, hints []Hint) error
	Subscribe(fn func(Hint)) (stop func(), err error)
}
