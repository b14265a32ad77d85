package cairn

import "strings"

// StepKind is what a step does.
//
// Adding a kind: its constant here and in Values, its check in
// kindChecks, and its behaviour in the engine's table (engine/kinds.go).
// The API's enum, the SDK and the CLI follow from Values.
type StepKind string

// Step kinds.
const (
	// KindTask runs a body on a worker.
	KindTask StepKind = "task"
	// KindWait waits for a named event sent to the run, or a timeout.
	KindWait StepKind = "wait"
	// KindSleep waits for a fixed time.
	KindSleep StepKind = "sleep"
	// KindMap runs its body once per element of an array (see kinds_map.go).
	KindMap StepKind = "map"
	// KindChild starts a run of another workflow and ends with it.
	KindChild StepKind = "child"
)

// Values lists every step kind (the API's enum).
func (StepKind) Values() []StepKind {
	return []StepKind{KindTask, KindWait, KindSleep, KindMap, KindChild}
}

// A kindCheck validates the options of a step of one kind. add reports a
// field error; field is relative to the step ("" for the step itself,
// ".event", …). The options of task steps (delivery, retry, timeout,
// max_deliveries) are refused on other kinds by Validate itself.
type kindCheck func(s *Step, add func(field, format string, args ...any))

// kindChecks holds each kind's check, used by Workflow.Validate.
var kindChecks = map[StepKind]kindCheck{
	KindTask: func(s *Step, add func(field, format string, args ...any)) {
		if s.Event != "" || s.WaitTimeout != 0 || s.Duration != 0 {
			add("", "a task step takes no event, wait_timeout or duration")
		}
		noMapOptions(s, add)
		noChildOptions(s, add)
	},
	KindWait: func(s *Step, add func(field, format string, args ...any)) {
		if s.Event == "" {
			add(".event", "a wait step needs the event name it waits for")
		} else if !validText(s.Event) {
			add(".event", "must be valid UTF-8 without control characters: events of that name could never be sent")
		}
		if s.WaitTimeout < 0 {
			add(".wait_timeout", "must not be negative")
		}
		noMapOptions(s, add)
		noChildOptions(s, add)
	},
	KindSleep: func(s *Step, add func(field, format string, args ...any)) {
		if s.Duration <= 0 {
			add(".duration", "a sleep step needs a positive duration")
		}
		noMapOptions(s, add)
		noChildOptions(s, add)
	},
	KindMap:   checkMap,
	KindChild: checkChild,
}

// kindList is the kinds for people: "task, wait or sleep".
func kindList() string {
	vs := StepKind("").Values()
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = string(v)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
