package cairn

import (
	"fmt"
	"slices"
	"strings"
)

// StepKind is what a step does.
//
// Adding a kind: its constant here and in Values, the options it takes in
// kindOptions, its check in kindChecks, and its behaviour in the engine's
// table (engine/kinds.go).
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
	// KindFunction runs a durable function on a worker: its body's
	// operations are checkpointed in the step's history (function.go).
	KindFunction StepKind = "function"
)

// Values lists every step kind (the API's enum).
func (StepKind) Values() []StepKind {
	return []StepKind{KindTask, KindWait, KindSleep, KindMap, KindChild, KindFunction}
}

// A kindCheck validates what a kind needs of its own options (a wait's
// event, a sleep's duration, …). add reports a field error; field is
// relative to the step ("" for the step itself, ".event", …). Options of
// other kinds are refused before it, from kindOptions.
type kindCheck func(s *Step, add func(field, format string, args ...any))

// kindOptions is the one table of which optional step fields (by JSON
// name) each kind takes; id, kind, after, input and when every kind
// takes. Workflow.Validate refuses the others, the Go SDK's options ask
// it (StepKind.Takes), and the API publishes it in the spec
// (x-kind-options on Step), from which the TypeScript SDK's check is
// generated.
var kindOptions = map[StepKind][]string{
	KindTask:  {"delivery", "retry", "timeout", "max_deliveries", "concurrency", "rate_limit", "priority", "requires_labels", "cache", "next", "max_visits"},
	KindWait:  {"event", "events", "if", "wait_timeout", "answer"},
	KindSleep: {"duration"},
	// A map's items are task attempts: they take a task's delivery,
	// retry, timeout and max_deliveries.
	KindMap:   {"delivery", "retry", "timeout", "max_deliveries", "items", "max_concurrency", "tolerated_failures", "tolerated_failure_percent", "requires_labels"},
	KindChild: {"workflow", "child_version"},
	// A function's driver is a task attempt that replays: at_least_once
	// always (its steps choose their own delivery).
	KindFunction: {"retry", "timeout", "max_deliveries", "concurrency", "rate_limit", "priority", "requires_labels", "next", "max_visits"},
}

// stepOptions tells, for each optional field of kindOptions, whether a
// step sets it.
var stepOptions = map[string]func(s *Step) bool{
	"delivery":                  func(s *Step) bool { return s.Delivery != "" },
	"retry":                     func(s *Step) bool { return s.Retry != nil },
	"timeout":                   func(s *Step) bool { return s.Timeout != 0 },
	"max_deliveries":            func(s *Step) bool { return s.MaxDeliveries != 0 },
	"concurrency":               func(s *Step) bool { return s.Concurrency != nil },
	"rate_limit":                func(s *Step) bool { return s.RateLimit != nil },
	"priority":                  func(s *Step) bool { return s.Priority != nil },
	"requires_labels":           func(s *Step) bool { return len(s.RequiresLabels) > 0 },
	"cache":                     func(s *Step) bool { return s.Cache != nil },
	"event":                     func(s *Step) bool { return s.Event != "" },
	"events":                    func(s *Step) bool { return len(s.Events) > 0 },
	"if":                        func(s *Step) bool { return s.If != "" },
	"wait_timeout":              func(s *Step) bool { return s.WaitTimeout != 0 },
	"answer":                    func(s *Step) bool { return s.Answer != "" },
	"duration":                  func(s *Step) bool { return s.Duration != 0 },
	"items":                     func(s *Step) bool { return s.Items != "" },
	"next":                      func(s *Step) bool { return len(s.Next) > 0 },
	"max_visits":                func(s *Step) bool { return s.MaxVisits != 0 },
	"max_concurrency":           func(s *Step) bool { return s.MaxConcurrency != 0 },
	"tolerated_failures":        func(s *Step) bool { return s.ToleratedFailures != 0 },
	"tolerated_failure_percent": func(s *Step) bool { return s.ToleratedFailurePercent != 0 },
	"workflow":                  func(s *Step) bool { return s.Workflow != "" },
	"child_version":             func(s *Step) bool { return s.ChildVersion != "" },
}

// KindOptions returns which optional step fields (JSON names) each kind
// takes: a copy of the table Validate applies.
func KindOptions() map[StepKind][]string {
	out := make(map[StepKind][]string, len(kindOptions))
	for k, v := range kindOptions {
		out[k] = slices.Clone(v)
	}
	return out
}

// Takes returns nil when steps of kind k (task when "") take the optional
// field option (its JSON name, like "retry"), and otherwise the error a
// definition setting it gets: "retry applies to task and map steps only".
func (k StepKind) Takes(option string) error {
	if k == "" {
		k = KindTask
	}
	if slices.Contains(kindOptions[k], option) {
		return nil
	}
	var takers []string
	for _, kind := range k.Values() {
		if slices.Contains(kindOptions[kind], option) {
			takers = append(takers, string(kind))
		}
	}
	if len(takers) == 0 {
		return fmt.Errorf("%s is not a step option", option)
	}
	return fmt.Errorf("%s applies to %s steps only", option, orList(takers, "and"))
}

// checkStep validates a step's kind and options: each option set must be
// one its kind takes (kindOptions), then the kind's own check.
func checkStep(s *Step, add func(field, format string, args ...any)) {
	k := s.EffectiveKind()
	check, ok := kindChecks[k]
	if !ok {
		add(".kind", "unknown kind %q (want %s)", s.Kind, kindList())
		return
	}
	for _, option := range stepOptionNames {
		if stepOptions[option](s) {
			if err := k.Takes(option); err != nil {
				add("."+option, "%s", err)
			}
		}
	}
	check(s, add)
}

// stepOptionNames is stepOptions' keys in a fixed order (the order of
// Validate's errors).
var stepOptionNames = func() []string {
	names := make([]string, 0, len(stepOptions))
	for n := range stepOptions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}()

// kindChecks holds each kind's own check, used by checkStep.
var kindChecks = map[StepKind]kindCheck{
	KindTask: checkCache, // cache.go
	KindWait: checkWait,  // events.go
	KindSleep: func(s *Step, add func(field, format string, args ...any)) {
		if s.Duration <= 0 {
			add(".duration", "a sleep step needs a positive duration")
		}
	},
	KindMap:      checkMap,
	KindChild:    checkChild,
	KindFunction: func(*Step, func(field, format string, args ...any)) {},
}

// kindList is the kinds for people: "task, wait or sleep".
func kindList() string {
	vs := StepKind("").Values()
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = string(v)
	}
	return orList(names, "or")
}

// orList joins names for people: "a", "a or b", "a, b or c".
func orList(names []string, conj string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}
