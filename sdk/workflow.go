package sdk

import (
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
)

// WorkflowDef is a workflow defined in Go: its steps, their options and
// the handlers of its task steps. Build one with Workflow and chain
// Task, Wait and Sleep; a Worker registers it and serves its task steps.
//
//	triage := sdk.Workflow("triage", "1").
//		Task("classify", sdk.Handle(classify), sdk.Input(map[string]any{"text": "${input.body}"})).
//		Task("route", sdk.Handle(route), sdk.After("classify"), sdk.Retry(sdk.RetryPolicy{MaxAttempts: 5})).
//		Wait("approval", "approved", sdk.After("route"), sdk.Timeout(24*time.Hour)).
//		Sleep("cooldown", time.Minute, sdk.After("approval"))
//
// A definition is immutable once registered per (name, version): change
// anything but handler code and give it a new version.
type WorkflowDef struct {
	wf       cairn.Workflow
	handlers map[string]Handler
	errs     []error
	// compensation: add appends to the on_failure steps (OnFailure).
	compensation bool
}

// Workflow starts the definition of workflow name at version.
func Workflow(name, version string) *WorkflowDef {
	return &WorkflowDef{wf: cairn.Workflow{Name: name, Version: version}, handlers: map[string]Handler{}}
}

// Describe sets the workflow's description.
func (d *WorkflowDef) Describe(text string) *WorkflowDef {
	d.wf.Description = text
	return d
}

// Deadline sets the default run deadline, counted from the run's start.
// A run started with its own deadline keeps it.
func (d *WorkflowDef) Deadline(after time.Duration) *WorkflowDef {
	d.wf.Deadline = cairn.Duration(after)
	return d
}

// Budget sets the default budget of each run (a start may give its own):
// a run whose usage — every attempt's, failed ones' too — goes over it
// fails with class budget_exceeded.
func (d *WorkflowDef) Budget(b Budget) *WorkflowDef {
	d.wf.Budget = &b
	return d
}

// Singleton keeps one running run per rendered key (a template over the
// run's input, as a step's input template; "" for one per workflow): with
// SingletonSkip a start while one runs starts nothing and answers it
// (Run.Skipped), with SingletonCancelRunning it cancels that run.
func (d *WorkflowDef) Singleton(key, mode string) *WorkflowDef {
	d.wf.Singleton = &cairn.Singleton{Key: key, Mode: mode}
	return d
}

// Reduce declares how state key folds what steps write to it (default
// ReduceReplace): ReduceAppend, ReduceSum, ReduceMax, ReduceMin,
// ReduceMerge. Parallel steps writing the key then all count.
func (d *WorkflowDef) Reduce(key string, r Reducer) *WorkflowDef {
	if d.wf.Reducers == nil {
		d.wf.Reducers = map[string]cairn.Reducer{}
	}
	d.wf.Reducers[key] = r
	return d
}

// Encrypted declares that the workflow's payloads are encrypted on the
// client (WithCodec): the engine refuses, at registration, a template,
// condition, items expression or flow-control key that reads inside an
// encrypted value, and the SDKs leave the top-level input and state keys
// in clear unencrypted so that templates can read inside them.
func (d *WorkflowDef) Encrypted(clear ...string) *WorkflowDef {
	d.wf.Encrypted = true
	d.wf.Clear = clear
	return d
}

// Name returns the workflow's name.
func (d *WorkflowDef) Name() string { return d.wf.Name }

// Version returns the workflow's version.
func (d *WorkflowDef) Version() string { return d.wf.Version }

// Task adds a task step whose body h runs on a worker.
func (d *WorkflowDef) Task(id string, h Handler, opts ...StepOption) *WorkflowDef {
	return d.served(cairn.Step{ID: id, Kind: cairn.KindTask}, h, opts)
}

// served adds a step a worker serves with h (a task, a map, a function).
func (d *WorkflowDef) served(s cairn.Step, h Handler, opts []StepOption) *WorkflowDef {
	if h == nil {
		d.errs = append(d.errs, fmt.Errorf("step %q: nil handler", s.ID))
	}
	if _, dup := d.handlers[s.ID]; dup {
		d.errs = append(d.errs, fmt.Errorf("step %q: defined twice", s.ID))
	}
	d.handlers[s.ID] = h
	return d.add(s, opts)
}

// Wait adds a step that waits for an event named event sent to the run
// (Client.SendEvent, `cairn runs event`); the event's payload is its
// output. Timeout bounds the wait: past it the step fails with class
// timeout.
func (d *WorkflowDef) Wait(id, event string, opts ...StepOption) *WorkflowDef {
	return d.add(cairn.Step{ID: id, Kind: cairn.KindWait, Event: event}, opts)
}

// Sleep adds a step that waits for a fixed time; its output is null.
func (d *WorkflowDef) Sleep(id string, duration time.Duration, opts ...StepOption) *WorkflowDef {
	return d.add(cairn.Step{ID: id, Kind: cairn.KindSleep, Duration: cairn.Duration(duration)}, opts)
}

func (d *WorkflowDef) add(s cairn.Step, opts []StepOption) *WorkflowDef {
	for _, o := range opts {
		if err := o(&s); err != nil {
			d.errs = append(d.errs, fmt.Errorf("step %q: %w", s.ID, err))
		}
	}
	if s.Kind == cairn.KindTask {
		s.Kind = "" // the default, kept out of the stored form
	}
	if d.compensation {
		d.wf.OnFailure = append(d.wf.OnFailure, s)
		return d
	}
	d.wf.Steps = append(d.wf.Steps, s)
	return d
}

// Definition returns the workflow as the engine stores it, checked as the
// engine checks it (templates excepted: the engine compiles those at
// registration).
func (d *WorkflowDef) Definition() (cairn.Workflow, error) {
	if len(d.errs) > 0 {
		return d.wf, fmt.Errorf("workflow %s@%s: %w", d.wf.Name, d.wf.Version, errors.Join(d.errs...))
	}
	if err := d.wf.Validate("workflow " + d.wf.Name + "@" + d.wf.Version); err != nil {
		return d.wf, err
	}
	return d.wf, nil
}

// StepOption sets an option of a step.
type StepOption func(*cairn.Step) error

// takes is the option that sets a field of the step's kind with set,
// refusing a kind without the field (named as in the definition's JSON).
func takes(field string, set func(*cairn.Step)) StepOption {
	return func(s *cairn.Step) error {
		if err := s.Kind.Takes(field); err != nil {
			return err
		}
		set(s)
		return nil
	}
}

// After makes the step wait for the given steps to complete.
func After(steps ...string) StepOption {
	return func(s *cairn.Step) error {
		s.After = append(s.After, steps...)
		return nil
	}
}

// When makes the step conditional: a CEL condition over input, state,
// steps.<id>.output and run, evaluated when the step's dependencies are
// done. When it is false the step is skipped (status skipped, no output);
// a step whose dependencies were all skipped is skipped too, and a step
// with at least one completed dependency runs, so a join after two
// branches runs whichever branch was taken. Test a skipped step's output
// with has(steps.<id>).
//
//	Task("refund", refund, After("check"), When("steps.check.output.eligible"))
func When(condition string) StepOption {
	return func(s *cairn.Step) error {
		s.When = condition
		return nil
	}
}

// Input sets the step's input template: a value that encodes to JSON (a
// map, a struct, a string, a json.RawMessage) whose strings may hold CEL
// expressions as ${…} over input, state, steps.<id>.output and run
// ({id, workflow, version, correlation}). A string that is one expression
// takes the expression's value of any type; text around expressions
// interpolates. Without a template a step gets the run's input.
//
//	sdk.Input(map[string]any{
//		"text":   "${input.subject + ': ' + input.body}",
//		"urgent": "${steps.classify.output.priority == 'high'}",
//	})
func Input(template any) StepOption {
	return func(s *cairn.Step) error {
		b, err := toJSON(template)
		if err != nil {
			return fmt.Errorf("input template: %w", err)
		}
		s.Input = b
		return nil
	}
}

// RetryPolicy says how a failed task step is retried. Zero fields take
// the engine's defaults (3 attempts, 1s initial backoff doubling up to
// 5m, ±20% jitter).
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included.
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt.
	InitialBackoff time.Duration
	// MaxBackoff caps the wait between attempts.
	MaxBackoff time.Duration
	// Multiplier is the backoff growth per attempt.
	Multiplier float64
	// NonRetryable lists error classes (Failure) that fail the step at
	// once.
	NonRetryable []string
	// RetryAfterStart, for an AtMostOnce step, lists the error classes
	// that may run the body again after it started. By default a started
	// at_most_once attempt is never run again, whatever class it ends
	// with (retryable, panic, interrupted, timeout, …): the engine fails
	// the step, keeping the class. List a class only if a body that ended
	// with it has certainly not done its side effect.
	RetryAfterStart []string
}

// Retry sets a task step's retry policy.
func Retry(p RetryPolicy) StepOption {
	return takes("retry", func(s *cairn.Step) {
		s.Retry = &cairn.RetryPolicy{
			MaxAttempts: p.MaxAttempts, InitialBackoff: cairn.Duration(p.InitialBackoff),
			MaxBackoff: cairn.Duration(p.MaxBackoff), Multiplier: p.Multiplier, NonRetryable: p.NonRetryable,
			RetryAfterStart: p.RetryAfterStart,
		}
	})
}

// AtMostOnce makes a task step at_most_once: once its body has started
// (the worker said so), the body is never run again. A lost lease fails
// the step (class lost), and so does any error the attempt ends with —
// retryable, a panic, a timeout, a shutdown (interrupted) — keeping its
// class, unless RetryPolicy.RetryAfterStart lists it. For side effects
// that must not repeat and cannot be made idempotent; pass
// StepContext.IdempotencyKey to the side effect anyway.
func AtMostOnce() StepOption {
	return takes("delivery", func(s *cairn.Step) { s.Delivery = cairn.AtMostOnce })
}

// Timeout bounds a step. For a task step it is the longest one attempt
// may run, heartbeats or not (the attempt then fails with class timeout
// and is retried by the step's policy); for a wait step, how long to wait
// for the event (the step then fails with class timeout).
func Timeout(d time.Duration) StepOption {
	return func(s *cairn.Step) error {
		switch s.Kind {
		case cairn.KindTask, cairn.KindMap:
			s.Timeout = cairn.Duration(d)
		case cairn.KindWait:
			s.WaitTimeout = cairn.Duration(d)
		default:
			return s.Kind.Takes("timeout")
		}
		return nil
	}
}

// Next routes the run back to step to, an earlier step this one runs
// after, when the step completes and condition (CEL over input, state,
// run and steps.<id>.output and .visits, this step's included) holds: to
// and every step between run again, a new visit. Routes are tried in the
// order given; none holding, the run goes on. A task or function step.
//
//	Task("review", review, After("draft"),
//		Next("draft", "!steps.review.output.approved"), MaxVisits(5))
func Next(to, condition string) StepOption {
	return takes("next", func(s *cairn.Step) { s.Next = append(s.Next, cairn.Route{To: to, If: condition}) })
}

// MaxVisits bounds a looping step's visits [10, at most 1000]: a route
// back after its last visit fails the run with class loop_limit.
func MaxVisits(n int) StepOption {
	return takes("max_visits", func(s *cairn.Step) { s.MaxVisits = n })
}

// MaxDeliveries sets how many leases of a task step may be lost (expire
// without an answer) before the step is dead-lettered [5].
func MaxDeliveries(n int) StepOption {
	return takes("max_deliveries", func(s *cairn.Step) { s.MaxDeliveries = n })
}
