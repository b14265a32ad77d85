package cairn

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Events: what a wait step waits for (one event name, or any of several,
// each filtered by an optional CEL condition), and the triggers by which
// a published event starts runs (docs/DECISIONS.md section 38).

// Bounds of the event vocabulary.
const (
	// MaxWaitEvents is how many event names one wait step may list.
	MaxWaitEvents = 16
	// MaxTriggers is how many triggers one workflow version may declare.
	MaxTriggers = 8
	// MaxConditionBytes bounds an if condition, as it bounds a when.
	MaxConditionBytes = 2000
)

// Trigger starts a run of its workflow (its newest registered version)
// for every published event of its name whose payload matches its if.
type Trigger struct {
	Event string `json:"event" minLength:"1" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"The name of the published events that start a run."`
	If    string `json:"if,omitempty" maxLength:"2000" doc:"A CEL condition over event (its name, id and payload; bare, or as ${expr}): only the events for which it is true start a run. An event it cannot be evaluated on (a missing field, not a bool) starts none."`
}

// CancelOn cancels a running run of the workflow when a published event
// with this name, matching its if, arrives (within timeout of the run's
// start, when set).
type CancelOn struct {
	Event   string   `json:"event" minLength:"1" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"The name of the published events that cancel a run."`
	If      string   `json:"if,omitempty" maxLength:"2000" doc:"A CEL condition over event (name, id, payload) and the run's input, state and run (bare, or as ${expr}): only the events for which it is true cancel it. An event it cannot be evaluated on cancels nothing."`
	Timeout Duration `json:"timeout,omitempty" doc:"Only events published within this long of the run's start cancel it (default: any time while it runs)."`
}

// EventRef names the published event that started a run.
type EventRef struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// PublishRequest publishes an event: every workflow whose newest version
// has a trigger it matches gets a run.
type PublishRequest struct {
	Name    string          `json:"name" minLength:"1" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"The event's name: the triggers of that name are matched. Any text without control characters."`
	Payload json.RawMessage `json:"payload,omitempty" doc:"Any JSON: the input of the runs the event starts, and event.payload to the triggers' conditions."`
	ID      string          `json:"id,omitempty" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"The event's id: publishing it again starts nothing twice (per workflow, the start idempotency key event:<id>). Default: a new id, returned."`
}

// PublishResult says which runs an event started.
type PublishResult struct {
	ID        string         `json:"id" doc:"The event's id (the one given, or the one made)."`
	Runs      []TriggeredRun `json:"runs" nullable:"false" doc:"One per workflow whose trigger the event matched, in workflow name order."`
	Truncated bool           `json:"truncated,omitempty" doc:"More workflows than the server's limit have a trigger of this name: only the first (by name) were matched."`
	Cancelled []string       `json:"cancelled" nullable:"false" doc:"The running runs the event cancelled (their workflows' cancel_on matched it); empty when none."`
}

// TriggeredRun is the run an event started for one workflow.
type TriggeredRun struct {
	Workflow string `json:"workflow"`
	Version  string `json:"version"`
	Run      string `json:"run"`
	Existed  bool   `json:"existed,omitempty" doc:"The event's id had started it already (a retried publish): nothing was started."`
	Window   string `json:"window,omitempty" doc:"The workflow debounces or batches its events: the event joined this window, whose run starts when it closes (run is then empty)."`
}

// WaitEvents is the event names a wait step waits for: its events, or
// its one event.
func (s *Step) WaitEvents() []string {
	if len(s.Events) > 0 {
		return s.Events
	}
	if s.Event != "" {
		return []string{s.Event}
	}
	return nil
}

// WaitLabel is a wait step's event names for people: "a", or "a, b".
func (s *Step) WaitLabel() string { return strings.Join(s.WaitEvents(), ", ") }

// checkWait is the wait kind's check: one event, or a list of distinct
// ones, each a name that can be sent; a condition within bounds.
func checkWait(s *Step, add func(field, format string, args ...any)) {
	switch {
	case s.Event != "" && len(s.Events) > 0:
		add(".events", "set event or events, not both")
	case s.Event == "" && len(s.Events) == 0:
		add(".event", "a wait step needs the event name it waits for (event), or the names (events)")
	case len(s.Events) > MaxWaitEvents:
		add(".events", "at most %d event names", MaxWaitEvents)
	}
	for i, name := range s.WaitEvents() {
		f := ".event"
		if len(s.Events) > 0 {
			f = fmt.Sprintf(".events[%d]", i)
		}
		if !validName(name) {
			add(f, "must be valid UTF-8 without control characters, 1 to 128 bytes: events of that name could never be sent")
		} else if len(s.Events) > 0 && slices.Index(s.Events, name) < i {
			add(f, "event %q listed twice", name)
		}
	}
	checkCondition(s.If, ".if", add)
	if s.WaitTimeout < 0 {
		add(".wait_timeout", "must not be negative")
	}
}

// validateTriggers checks a workflow's triggers: few, each naming an
// event that can be published, each event once.
func (w *Workflow) validateTriggers(add func(field, format string, args ...any)) {
	if len(w.On) > MaxTriggers {
		add(".on", "at most %d triggers", MaxTriggers)
	}
	for i, t := range w.On {
		f := fmt.Sprintf(".on[%d]", i)
		if !validName(t.Event) {
			add(f+".event", "must be valid UTF-8 without control characters, 1 to 128 bytes")
		} else if slices.IndexFunc(w.On, func(o Trigger) bool { return o.Event == t.Event }) < i {
			add(f+".event", "a second trigger of event %q (one per event: join the conditions with ||)", t.Event)
		}
		checkCondition(t.If, f+".if", add)
	}
	if len(w.CancelOn) > MaxTriggers {
		add(".cancel_on", "at most %d", MaxTriggers)
	}
	for i, c := range w.CancelOn {
		f := fmt.Sprintf(".cancel_on[%d]", i)
		if !validName(c.Event) {
			add(f+".event", "must be valid UTF-8 without control characters, 1 to 128 bytes")
		}
		checkCondition(c.If, f+".if", add)
		if c.Timeout < 0 {
			add(f+".timeout", "must not be negative")
		}
	}
}

func validName(s string) bool { return s != "" && len(s) <= 128 && validText(s) }

// checkCondition checks an optional condition's size (the engine
// compiles it).
func checkCondition(cond, field string, add func(field, format string, args ...any)) {
	if len(cond) > MaxConditionBytes {
		add(field, "at most %d bytes", MaxConditionBytes)
	} else if cond != "" && strings.TrimSpace(cond) == "" {
		add(field, "empty condition")
	}
}
