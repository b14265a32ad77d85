package sdk

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/cairn-dev/cairn"
)

// Error classes with a meaning to the engine, re-exported for bodies that
// name them. Any other class is a typed failure (see Failure).
const (
	ClassRetryable  = cairn.ClassRetryable
	ClassFatal      = cairn.ClassFatal
	ClassUnservable = cairn.ClassUnservable
	ClassTimeout    = cairn.ClassTimeout
	// ClassPanic: the body panicked (the stack goes to the worker's log).
	ClassPanic = cairn.ClassPanic
	// ClassOutputTooLarge: the engine refused the output or state patch
	// as too large for the run record.
	ClassOutputTooLarge = cairn.ClassOutputTooLarge
	// ClassInterrupted: the worker shut down before the body ended.
	ClassInterrupted = cairn.ClassInterrupted
	// ClassBudgetExceeded: the run's usage went over its budget (a run's
	// error; WorkflowDef.Budget, StartOptions.Budget).
	ClassBudgetExceeded = cairn.ClassBudgetExceeded
)

// Reason is why the engine refused a worker call (HTTP 409).
type Reason = cairn.Reason

// Rejection reasons of the worker protocol (HTTP 409), re-exported.
const (
	ReasonAlreadyApplied = cairn.ReasonAlreadyApplied
	ReasonFenced         = cairn.ReasonFenced
	ReasonRunTerminal    = cairn.ReasonRunTerminal
	ReasonNotStarted     = cairn.ReasonNotStarted
	ReasonTooLarge       = cairn.ReasonTooLarge
)

// Causes of a cancelled step context: read them with context.Cause(ctx).
var (
	// ErrLeaseLost: the engine fenced the lease (it expired and was
	// reclaimed, or another attempt finished the step). Nothing the body
	// returns is published.
	ErrLeaseLost = errors.New("cairn: lease lost (fenced)")
	// ErrRunEnded: the run ended (completed, failed, cancelled, timed out)
	// while the body ran. Nothing the body returns is published.
	ErrRunEnded = errors.New("cairn: run ended")
	// ErrAttemptTimeout: the attempt outlived the step's timeout; the
	// engine fails it with class timeout.
	ErrAttemptTimeout = errors.New("cairn: attempt timed out")
	// ErrShutdown: the worker is shutting down and the drain timeout
	// passed. Unless the body then returns its output at once, the attempt
	// is reported with class interrupted: the engine runs an at_least_once
	// step again, and fails a started at_most_once step.
	ErrShutdown = errors.New("cairn: worker shutting down")
)

// StepError is an error with the class the engine files it under. Build
// one with Retryable or Failure; a body's plain error is fatal.
type StepError struct {
	Class string
	Err   error
}

func (e *StepError) Error() string {
	if e.Err == nil {
		return e.Class
	}
	return e.Err.Error()
}

func (e *StepError) Unwrap() error { return e.Err }

// Retryable marks err as retryable: the engine retries the step with
// backoff within its retry budget. Retryable(nil) is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &StepError{Class: cairn.ClassRetryable, Err: err}
}

// Failure names err's class. The engine retries it like a retryable error
// unless the step's retry policy lists the class as non-retryable;
// "fatal" fails the step at once. Failure(class, nil) is nil.
func Failure(class string, err error) error {
	if err == nil {
		return nil
	}
	if class == "" {
		class = cairn.ClassFatal
	}
	return &StepError{Class: class, Err: err}
}

// Fatal marks err as fatal: the step fails at once, without retries. It is
// what a body's unmarked error means already; use it for clarity.
func Fatal(err error) error { return Failure(cairn.ClassFatal, err) }

// ClassOf returns the class an error is reported with: a Failure's or
// Retryable's class, fatal for any other error, "" for nil. A durable
// function's body uses it on an operation's error (a wait's timeout).
func ClassOf(err error) string {
	if err == nil {
		return ""
	}
	class, _ := classify(err)
	return class
}

// classify returns the class and message a body's error is reported with.
func classify(err error) (class, message string) {
	var se *StepError
	if errors.As(err, &se) {
		class = se.Class
	} else {
		class = cairn.ClassFatal
	}
	message = err.Error()
	if message == "" {
		message = class
	}
	return class, message
}

// APIError is a request the API refused: an RFC 9457 problem, with the
// worker protocol's reason on a 409.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Title is the problem's title ("Not Found", "Refused: fenced").
	Title string
	// Detail says what went wrong.
	Detail string
	// Reason is set on a 409 to a worker call: already_applied, fenced,
	// run_terminal, not_started or too_large.
	Reason Reason
	// Errors are the field-level details of a validation problem.
	Errors []FieldProblem
}

// FieldProblem is one field-level detail of a problem.
type FieldProblem struct {
	Location string
	Message  string
}

// Error is one line: status, title or detail, reason, field details.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", e.Status)
	if e.Reason != "" {
		fmt.Fprintf(&b, " %s", e.Reason)
	} else if e.Title != "" {
		fmt.Fprintf(&b, " %s", e.Title)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	for i, f := range e.Errors {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Errors)-3)
			break
		}
		// Skip a detail the summary already says.
		if f.Message == "" || strings.Contains(e.Detail, f.Message) {
			continue
		}
		if f.Location != "" {
			fmt.Fprintf(&b, "; %s: %s", f.Location, f.Message)
		} else {
			fmt.Fprintf(&b, "; %s", f.Message)
		}
	}
	return b.String()
}

// Temporary reports whether retrying the same request may succeed: the
// store was busy, the server failed or was unreachable.
func (e *APIError) Temporary() bool {
	return e.Status == 429 || e.Status >= 500
}

// ReasonOf returns the worker-protocol reason of a refused call, or "".
func ReasonOf(err error) Reason {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == 409 {
		return ae.Reason
	}
	return ""
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == 404
}

// IsConflict reports whether err is the API's 409 (a protocol rejection,
// a definition registered again with other content, a run already ended).
func IsConflict(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == 409
}

// transportError is a request that got no answer from the API.
type transportError struct {
	server string
	err    error
}

func (e *transportError) Error() string {
	msg := e.err.Error()
	if strings.Contains(msg, "connection refused") {
		return fmt.Sprintf("cannot reach cairn at %s: connection refused (is the server running? `make run` starts one)", e.server)
	}
	var ue *url.Error
	if errors.As(e.err, &ue) {
		// The URL of a lease's call names the lease, whose id carries
		// its secret nonce: an error is logged, so it names the call.
		return fmt.Sprintf("cairn at %s: %s %s: %v", e.server, ue.Op, redactLease(ue.URL), ue.Err)
	}
	return fmt.Sprintf("cairn at %s: %v", e.server, e.err)
}

// leaseInPath is a lease id in an API path.
var leaseInPath = regexp.MustCompile(`/steps/[^/?]+/`)

// redactLease is u with a lease id in its path replaced by "{lease}".
func redactLease(u string) string {
	return leaseInPath.ReplaceAllStringFunc(u, func(m string) string {
		if m == "/steps/claim/" || m == "/steps/heartbeat/" {
			return m
		}
		return "/steps/{lease}/"
	})
}

func (e *transportError) Unwrap() error { return e.err }

// temporary reports whether an API call's error may go away on retry.
func temporary(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	var ae *APIError
	return errors.As(err, &ae) && ae.Temporary()
}
