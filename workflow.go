// Package cairn holds the domain types of cairn, a durable workflow engine
// whose only state is an object-storage bucket: workflow definitions,
// runs, steps, leases and the errors of the worker protocol. The engine
// lives in engine, the HTTP API in api, the store in blob, the Go
// worker SDK in sdk.
package cairn

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Delivery is a task step's delivery guarantee.
type Delivery string

// Delivery modes.
const (
	// AtLeastOnce re-runs a body whose lease was lost. The default.
	AtLeastOnce Delivery = "at_least_once"
	// AtMostOnce never runs a body twice once it has started: a lost lease
	// that had started fails the step.
	AtMostOnce Delivery = "at_most_once"
)

// Values lists every delivery mode (the API's enum).
func (Delivery) Values() []Delivery { return []Delivery{AtLeastOnce, AtMostOnce} }

// RetryPolicy says how a failed task step is retried.
type RetryPolicy struct {
	MaxAttempts    int      `json:"max_attempts,omitempty" minimum:"1" maximum:"1000" doc:"Attempts in all, the first included (default 3)."`
	InitialBackoff Duration `json:"initial_backoff,omitempty" doc:"Wait before the second attempt, as a Go duration (default 1s)."`
	MaxBackoff     Duration `json:"max_backoff,omitempty" doc:"Longest wait between attempts (default 5m)."`
	Multiplier     float64  `json:"multiplier,omitempty" minimum:"1" maximum:"10" doc:"Backoff growth per attempt (default 2). Each wait is jittered by ±20%."`
	NonRetryable   []string `json:"non_retryable,omitempty" nullable:"false" doc:"Error classes that fail the step at once."`
	// RetryAfterStart lists the classes that may retry an at_most_once
	// attempt whose started was recorded. Empty (the default): a started
	// at_most_once attempt is never offered again, whatever its class.
	RetryAfterStart []string `json:"retry_after_start,omitempty" nullable:"false" doc:"at_most_once only: error classes that may retry an attempt after its started was recorded (an explicit opt-in; by default a started at_most_once attempt is never run again)."`
}

// Retries reports whether a failure of class may be retried under p
// (within its attempts): every class but the engine's final ones and
// those p lists as non-retryable.
func (p RetryPolicy) Retries(class string) bool {
	switch class {
	case ClassFatal, ClassRenderError, ClassLost, ClassDeadLettered, ClassOutputTooLarge, ClassNondeterminism:
		return false
	}
	return !slices.Contains(p.NonRetryable, class)
}

// Backoff is the wait before the next attempt after failures failures
// under p (its defaults applied), jittered by ±20%.
func (p RetryPolicy) Backoff(failures int) time.Duration {
	d := float64(p.InitialBackoff.D()) * math.Pow(p.Multiplier, float64(failures-1))
	if max := float64(p.MaxBackoff.D()); d > max {
		d = max
	}
	d *= 0.8 + 0.4*rand.Float64()
	return time.Duration(d)
}

// Defaults for a RetryPolicy's zero fields.
const (
	DefaultMaxAttempts    = 3
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultMultiplier     = 2.0
	// DefaultMaxDeliveries is how many leases of one step may be lost
	// (expire without an answer) before the step is dead-lettered.
	DefaultMaxDeliveries = 5
)

// WithDefaults returns p with zero fields set to their defaults.
func (p *RetryPolicy) WithDefaults() RetryPolicy {
	var r RetryPolicy
	if p != nil {
		r = *p
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.InitialBackoff == 0 {
		r.InitialBackoff = Duration(DefaultInitialBackoff)
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = Duration(DefaultMaxBackoff)
	}
	if r.Multiplier == 0 {
		r.Multiplier = DefaultMultiplier
	}
	return r
}

// Step is one node of a workflow's DAG.
type Step struct {
	ID    string          `json:"id" minLength:"1" maxLength:"64" pattern:"^[A-Za-z][A-Za-z0-9_-]*$" doc:"Unique within the workflow; a CEL identifier-like name."`
	Kind  StepKind        `json:"kind,omitempty" doc:"task (default), wait, sleep, map or child. Which optional fields each kind takes is x-kind-options of this schema."`
	After []string        `json:"after,omitempty" nullable:"false" doc:"Steps that must complete before this one starts."`
	Input json.RawMessage `json:"input,omitempty" doc:"Input template: JSON whose strings may hold CEL expressions as ${expr} over input, state, steps.<id>.output and run."`
	// When makes the step conditional (a branch).
	When string `json:"when,omitempty" maxLength:"2000" doc:"A CEL condition over input, state, steps.<id>.output and run (bare, or as ${expr}), evaluated when the step's dependencies are done. False: the step is skipped. A step whose dependencies were all skipped is skipped too; a step with at least one completed dependency runs (a join after branches). Skipped steps have no output: test with has(steps.<id>)."`
	// Task options.
	Delivery      Delivery     `json:"delivery,omitempty" doc:"Task delivery guarantee (default at_least_once)."`
	Retry         *RetryPolicy `json:"retry,omitempty" doc:"Retry policy of a task step."`
	Timeout       Duration     `json:"timeout,omitempty" doc:"Longest one attempt of a task may run, heartbeats or not (default: none)."`
	MaxDeliveries int          `json:"max_deliveries,omitempty" minimum:"1" maximum:"100" doc:"Lost leases before the step is dead-lettered (default 5)."`
	Cache         *StepCache   `json:"cache,omitempty" doc:"Task steps: a result cache. An attempt whose key has a fresh entry (written by a completed attempt of this workflow's step) is completed from it without a worker, marked cached."`
	// Wait options.
	Event       string   `json:"event,omitempty" maxLength:"128" doc:"Wait steps: the event name that resumes the wait (its payload is the step's output)."`
	Events      []string `json:"events,omitempty" nullable:"false" maxItems:"16" doc:"Wait steps, instead of event: the wait resumes on the first of these events (matching if) to come; its output is {event, id, payload}, event naming which came."`
	If          string   `json:"if,omitempty" maxLength:"2000" doc:"Wait steps: a CEL condition over event (name, id, payload), input, state, steps.<id>.output and run (bare, or as ${expr}): the wait takes only the events for which it is true; the others are left for other waits, or kept. An event it cannot be evaluated on (a missing field, not a bool) is not taken."`
	WaitTimeout Duration `json:"wait_timeout,omitempty" doc:"Wait steps: fail the step with class timeout after this long (default: wait forever)."`
	Answer      string   `json:"answer,omitempty" maxLength:"64" doc:"Wait steps: the step, after this one, whose output answers an update the wait takes (POST /runs/{run}/updates). Unset: the wait's own output (the update's input) answers."`
	// Sleep options.
	Duration Duration `json:"duration,omitempty" doc:"Sleep steps: how long to sleep."`
	// Flow control (flow.go), task steps.
	Concurrency *ConcurrencyLimit `json:"concurrency,omitempty" doc:"Task steps: most attempts of this step holding a lease at once, per rendered key (across runs of every version of the workflow)."`
	RateLimit   *RateLimit        `json:"rate_limit,omitempty" doc:"Task steps: most attempts of this step handed out per period, per rendered key; attempts beyond it wait."`
	Priority    *int              `json:"priority,omitempty" minimum:"-100" maximum:"100" doc:"Task steps: overrides the run's priority for this step (higher is offered first)."`
	// Label routing (flow.go), task, map and function steps.
	RequiresLabels map[string]string `json:"requires_labels,omitempty" doc:"Task, map and function steps: offered only to workers registered with every one of these labels (key: value, as the worker's labels), such as {\"gpu\": \"true\", \"region\": \"eu\"}. A run whose ready step no live worker matches says so (no_live_worker)."`
	// Map options (kinds_map.go).
	Items                   string  `json:"items,omitempty" maxLength:"2000" doc:"Map steps: a CEL expression (bare or as ${expr}) that renders the array to map over; the step's body runs once per element, its input template sees item and index."`
	MaxConcurrency          int     `json:"max_concurrency,omitempty" minimum:"0" maximum:"1000" doc:"Map steps: most items running at once (default 100)."`
	ToleratedFailures       int     `json:"tolerated_failures,omitempty" minimum:"0" doc:"Map steps: items that may fail (after their retries) without failing the map; their outputs are null."`
	ToleratedFailurePercent float64 `json:"tolerated_failure_percent,omitempty" minimum:"0" maximum:"100" doc:"Map steps: the share of items, in percent, that may fail without failing the map (the larger of this and tolerated_failures applies)."`
	// Loops (loop.go), task and function steps.
	Next      []Route `json:"next,omitempty" nullable:"false" maxItems:"8" doc:"Task and function steps: routes back to an earlier step, tried in order when this step completes; the first whose if holds runs its to step and every step between again (a new visit). None holds: the run goes on."`
	MaxVisits int     `json:"max_visits,omitempty" minimum:"0" maximum:"1000" doc:"Task and function steps with next: the most visits this step may make (default 10); a route past it fails the run with class loop_limit."`
	// Child options (kinds_map.go).
	Workflow     string `json:"workflow,omitempty" maxLength:"128" doc:"Child steps: the workflow the child run runs."`
	ChildVersion string `json:"child_version,omitempty" maxLength:"64" doc:"Child steps: the child workflow's version (default: its newest when the step starts)."`
}

// EffectiveKind returns the step's kind, task when unset.
func (s *Step) EffectiveKind() StepKind {
	if s.Kind == "" {
		return KindTask
	}
	return s.Kind
}

// EffectiveDelivery returns the step's delivery mode, at_least_once when
// unset.
func (s *Step) EffectiveDelivery() Delivery {
	if s.Delivery == "" {
		return AtLeastOnce
	}
	return s.Delivery
}

// Workflow is a named, versioned DAG of steps. A (name, version) pair is
// immutable once registered.
type Workflow struct {
	Name        string             `json:"name" minLength:"1" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Workflow name."`
	Version     string             `json:"version" minLength:"1" maxLength:"64" pattern:"^[A-Za-z0-9][A-Za-z0-9_.+-]*$" doc:"Version; several coexist, runs pin theirs."`
	Description string             `json:"description,omitempty" maxLength:"2000"`
	Steps       []Step             `json:"steps" nullable:"false" minItems:"1" maxItems:"1000" doc:"The steps; order does not matter, after does."`
	Deadline    Duration           `json:"deadline,omitempty" doc:"Default run deadline, from start (default: none)."`
	Budget      *Budget            `json:"budget,omitempty" doc:"Default budget of each run (a start may give its own): a run whose usage goes over it fails with class budget_exceeded."`
	Singleton   *Singleton         `json:"singleton,omitempty" doc:"One running run per key: a start while a run holds its key is skipped (answering that run) or cancels that run (flow.go)."`
	Debounce    *Debounce          `json:"debounce,omitempty" doc:"Event-started runs only: a run starts after period without a new matching event of its key, with the last event's payload (eventflow.go)."`
	Batch       *EventBatch        `json:"batch,omitempty" doc:"Event-started runs only: a key's events are gathered into one run whose input is the list of their payloads, started at max_size events or timeout after the first (eventflow.go)."`
	Reducers    map[string]Reducer `json:"reducers,omitempty" doc:"How a state key folds what steps write to it (default replace): append (arrays), sum, max, min (numbers), merge (objects, shallow). Concurrent writers of a key (parallel steps, map items) then all count, folded in commit order."`
	// Concurrency limits across the workflow's runs (flow.go).
	Concurrency []ConcurrencyLimit `json:"concurrency,omitempty" nullable:"false" maxItems:"4" doc:"Limits on the task attempts of all runs of this workflow (every version) holding a lease at once: each per rendered key, or, without a key, one global limit for the workflow."`
	// OnFailure is the compensation (a saga): steps run when the run fails.
	OnFailure []Step `json:"on_failure,omitempty" nullable:"false" maxItems:"100" doc:"Compensation steps (a saga): a small DAG of task steps run after the run fails, with the failed run's input, state and step outputs in their templates. The run stays failed; its compensation status says how they went."`
	// Client-side encryption (docs/DECISIONS.md): the server holds the
	// payloads of such a workflow as opaque encrypted values.
	Encrypted bool       `json:"encrypted,omitempty" doc:"The SDKs encrypt this workflow's payloads on the client (each top-level value of the run input and state, step outputs, event payloads): the server sees them as opaque {\"$cairn_encrypted\":…} values. Its templates may pass an encrypted value whole (${input.k}, ${state.k}, ${steps.a.output}) but not look inside one: a definition whose template does is refused."`
	CancelOn  []CancelOn `json:"cancel_on,omitempty" nullable:"false" maxItems:"8" doc:"A running run is cancelled by a published event (POST /events) with one of these names whose if matches it: the event's payload against the run's input, for example."`
	On        []Trigger  `json:"on,omitempty" nullable:"false" maxItems:"8" doc:"Triggers: an event published (POST /events) with one of these names, matching its if, starts a run of this workflow's newest registered version, with the event's payload as input."`
	Clear     []string   `json:"clear,omitempty" nullable:"false" maxItems:"100" doc:"Encrypted workflows: top-level keys of the run input and state the SDKs leave in the clear, so templates, conditions and keys may read inside them."`
}

// Step returns the step with the given id, or nil.
func (w *Workflow) Step(id string) *Step {
	for i := range w.Steps {
		if w.Steps[i].ID == id {
			return &w.Steps[i]
		}
	}
	return nil
}

// FieldError names an invalid field of a definition or request and says
// why.
type FieldError struct {
	// Field is a JSON path such as "steps[2].after[0]".
	Field string
	// Message says what is wrong.
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidationError is a list of field errors.
type ValidationError []*FieldError

func (v ValidationError) Error() string {
	if len(v) == 1 {
		return v[0].Error()
	}
	return fmt.Sprintf("%s (and %d more)", v[0].Error(), len(v)-1)
}

// StepIDPattern is what a step id must match (and be at most 64 bytes).
const StepIDPattern = `^[A-Za-z][A-Za-z0-9_-]*$`

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]*$`)
	stepRE    = regexp.MustCompile(StepIDPattern)
)

// Validate checks a definition's structure: names, unique step ids, known
// dependencies, no cycles, and each kind's options. Templates are checked
// by the engine, which compiles them. prefix names the definition in
// field paths (for example "workflows[0]").
func (w *Workflow) Validate(prefix string) error {
	var errs ValidationError
	add := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: prefix + field, Message: fmt.Sprintf(format, args...)})
	}
	if !nameRE.MatchString(w.Name) || len(w.Name) > 128 {
		add(".name", "must match %s and be at most 128 bytes", nameRE)
	}
	if !versionRE.MatchString(w.Version) || len(w.Version) > 64 {
		add(".version", "must match %s and be at most 64 bytes", versionRE)
	}
	if len(w.Steps) == 0 {
		add(".steps", "a workflow needs at least one step")
	}
	if w.Deadline < 0 {
		add(".deadline", "must not be negative")
	}
	w.checkReducers(add)
	if err := w.Budget.Check(prefix + ".budget"); err != nil {
		errs = append(errs, err.(ValidationError)...)
	}
	index := map[string]int{}
	for i, s := range w.Steps {
		f := fmt.Sprintf(".steps[%d]", i)
		if !stepRE.MatchString(s.ID) || len(s.ID) > 64 {
			add(f+".id", "must match %s and be at most 64 bytes", stepRE)
		} else if j, dup := index[s.ID]; dup {
			add(f+".id", "duplicate step id %q (also steps[%d])", s.ID, j)
		} else {
			index[s.ID] = i
		}
		stepAdd := func(field, format string, args ...any) { add(f+field, format, args...) }
		checkStep(&s, stepAdd)
		checkStepOptions(&s, stepAdd)
	}
	w.checkAfter(index, add)
	w.checkAnswers(index, add)  // update.go
	w.validateLoops(index, add) // loop.go
	w.validateFlow(func(field, format string, args ...any) { add(field, format, args...) })
	w.validateOnFailure(add) // compensation.go
	w.validateTriggers(add)  // events.go
	w.checkEventFlow(add)    // eventflow.go
	if len(w.Clear) > 0 && !w.Encrypted {
		add(".clear", "lists keys left in the clear of an encrypted workflow: set encrypted too")
	}
	seenClear := map[string]bool{}
	for i, k := range w.Clear {
		if k == "" || len(k) > 128 || seenClear[k] {
			add(fmt.Sprintf(".clear[%d]", i), "must be a distinct, non-empty key of at most 128 bytes")
		}
		seenClear[k] = true
	}
	if len(errs) == 0 {
		if cycle := w.findCycle(); cycle != nil {
			i := index[cycle[0]]
			add(fmt.Sprintf(".steps[%d].after", i), "dependency cycle: %v", cycle)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkStepOptions checks the options every kind of step has: delivery,
// timeout, retry, input and when.
func checkStepOptions(s *Step, add func(field, format string, args ...any)) {
	if d := s.Delivery; d != "" && d != AtLeastOnce && d != AtMostOnce {
		add(".delivery", "unknown delivery %q (want at_least_once or at_most_once)", d)
	}
	if s.Timeout < 0 {
		add(".timeout", "must not be negative")
	}
	if r := s.Retry; r != nil {
		if r.MaxAttempts < 0 {
			add(".retry.max_attempts", "must not be negative")
		}
		if r.InitialBackoff < 0 || r.MaxBackoff < 0 {
			add(".retry", "backoffs must not be negative")
		}
		if r.Multiplier != 0 && r.Multiplier < 1 {
			add(".retry.multiplier", "must be at least 1")
		}
	}
	if len(s.Input) > 0 && !json.Valid(s.Input) {
		add(".input", "not valid JSON")
	}
	if len(s.When) > 2000 {
		add(".when", "at most 2000 bytes")
	} else if s.When != "" && strings.TrimSpace(s.When) == "" {
		add(".when", "empty condition")
	}
}

// checkAfter checks each step's dependencies: known steps (index holds
// the valid ids), not the step itself, each listed once.
func (w *Workflow) checkAfter(index map[string]int, add func(field, format string, args ...any)) {
	for i, s := range w.Steps {
		seen := map[string]bool{}
		for j, a := range s.After {
			f := fmt.Sprintf(".steps[%d].after[%d]", i, j)
			switch {
			case a == s.ID:
				add(f, "step %q depends on itself", s.ID)
			case seen[a]:
				add(f, "dependency %q listed twice", a)
			default:
				if _, ok := index[a]; !ok {
					add(f, "unknown step %q", a)
				}
			}
			seen[a] = true
		}
	}
}

// findCycle returns the step ids of a dependency cycle, or nil.
func (w *Workflow) findCycle() []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	deps := map[string][]string{}
	for _, s := range w.Steps {
		deps[s.ID] = s.After
	}
	var stack []string
	var cycle []string
	var visit func(id string) bool
	visit = func(id string) bool {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range deps[id] {
			switch color[d] {
			case grey:
				for i, s := range stack {
					if s == d {
						cycle = append(append([]string{}, stack[i:]...), d)
					}
				}
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return false
	}
	for _, id := range slices.Sorted(maps.Keys(deps)) {
		if color[id] == white && visit(id) {
			return cycle
		}
	}
	return nil
}

// Sinks returns the ids of steps no other step depends on, in definition
// order: their outputs make the run's output.
func (w *Workflow) Sinks() []string {
	dep := map[string]bool{}
	for _, s := range w.Steps {
		for _, a := range s.After {
			dep[a] = true
		}
	}
	var out []string
	for _, s := range w.Steps {
		if !dep[s.ID] {
			out = append(out, s.ID)
		}
	}
	return out
}

// Ancestors returns the ids of every step id transitively depends on.
func (w *Workflow) Ancestors(id string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(s string) {
		if st := w.Step(s); st != nil {
			for _, a := range st.After {
				if !seen[a] {
					seen[a] = true
					walk(a)
				}
			}
		}
	}
	walk(id)
	return slices.Sorted(maps.Keys(seen))
}

// validText reports whether s is text an event name may be: valid UTF-8
// without control characters (the rule the API applies to event names).
func validText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Events is the event names the workflow's wait steps wait for, each
// once, in step order.
func (w *Workflow) Events() []string {
	var out []string
	for _, s := range w.Steps {
		for _, name := range s.WaitEvents() {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// EventWarning says, when no wait step of w waits for event name, that
// nothing will consume it and which names its waits are for; "" when a
// wait uses the name, or when a function step may (its waits are code).
func (w *Workflow) EventWarning(name string) string {
	waits := w.Events()
	if slices.Contains(waits, name) || slices.ContainsFunc(w.Steps, func(s Step) bool { return s.EffectiveKind() == KindFunction }) {
		return ""
	}
	msg := fmt.Sprintf("no wait step of workflow %s version %s waits for event %q: it is kept, but nothing will consume it", w.Name, w.Version, name)
	if len(waits) > 0 {
		q := make([]string, len(waits))
		for i, e := range waits {
			q[i] = strconv.Quote(e)
		}
		msg += " (its waits are for " + strings.Join(q, ", ") + ")"
	}
	return msg
}
