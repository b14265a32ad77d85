package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
)

// Handler is the body of a task step. It returns the step's output (any
// value that encodes to JSON, or a json.RawMessage) or an error: a
// Retryable error is retried within the step's budget, a Failure names a
// class, anything else is fatal. A panic is recovered and reported with
// class panic. Most bodies are written with Handle, which decodes the
// input.
type Handler func(ctx StepContext) (any, error)

// Handle makes a Handler of a typed body: the step's rendered input is
// decoded into In (an input that does not decode fails the step as fatal:
// retrying cannot fix it), and Out is the step's output. In may be
// json.RawMessage to take the input as is, and struct{} to ignore it.
//
//	sdk.Handle(func(ctx sdk.StepContext, t Ticket) (Category, error) { … })
func Handle[In, Out any](body func(ctx StepContext, in In) (Out, error)) Handler {
	return func(ctx StepContext) (any, error) {
		var in In
		if err := decodeInput(ctx.Input(), &in); err != nil {
			return nil, Fatal(fmt.Errorf("decoding the input of step %s into %T: %w", ctx.Info().Step, in, err))
		}
		return body(ctx, in)
	}
}

func decodeInput(raw json.RawMessage, v any) error {
	switch p := v.(type) {
	case *json.RawMessage:
		*p = raw
		return nil
	case *struct{}:
		return nil
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// StepInfo describes the attempt a body runs.
type StepInfo struct {
	// Run, Workflow, Version and Step name what runs.
	Run, Workflow, Version, Step string
	// Attempt counts from 1; every lease is a new attempt.
	Attempt int
	// Delivery is at_least_once or at_most_once.
	Delivery cairn.Delivery
	// IdempotencyKey is stable across every attempt of this step of this
	// run: pass it to side-effecting calls.
	IdempotencyKey string
	// Correlation is the run's correlation id, if any.
	Correlation string
	// Worker is the id of the worker running the body.
	Worker string
	// Lease is the lease id.
	Lease string
	// TraceParent is the W3C traceparent of the engine's step span.
	TraceParent string
	// TimeoutAt is when the attempt times out (zero: no timeout).
	TimeoutAt time.Time
	// Item is, for an item of a map step, its index in the items array
	// (-1 otherwise). Step is then the map step.
	Item int
}

// StepContext is what a body gets: a context.Context that is cancelled
// when the lease is lost (context.Cause is ErrLeaseLost), the run ends
// (ErrRunEnded), the attempt times out (ErrAttemptTimeout) or the worker's
// drain timeout passes on shutdown (ErrShutdown) — plus the attempt's
// input, earlier outputs, run state, and the setters for what the engine
// records on completion. Spans opened with it as parent nest under the
// step's span, and their gen_ai token usage is summed into the step's.
type StepContext interface {
	context.Context
	// Info describes the attempt.
	Info() StepInfo
	// IdempotencyKey is Info().IdempotencyKey: stable across retries.
	IdempotencyKey() string
	// Input is the step's rendered input.
	Input() json.RawMessage
	// Output decodes the output of an earlier step (one this step depends
	// on, directly or not) into v. It reports ErrNoValue when there is
	// none.
	Output(step string, v any) error
	// Outputs returns the earlier steps' outputs by step id.
	Outputs() map[string]json.RawMessage
	// State decodes the run state's key into v, as it was when the lease
	// was made. It reports ErrNoValue when the key is unset.
	State(key string, v any) error
	// StateMap returns the run state as it was when the lease was made.
	StateMap() map[string]json.RawMessage
	// SetStatePatch adds top-level keys to the patch merged into the run
	// state when the attempt ends (on failure too); later calls replace
	// earlier values of the same key.
	SetStatePatch(patch map[string]any) error
	// SetState is SetStatePatch of one key.
	SetState(key string, value any) error
	// SetAttributes sets the run's search attributes when the attempt
	// completes (a string, number, bool or time.Time each; nil removes
	// one); later calls replace earlier values of the same name.
	SetAttributes(attrs map[string]any) error
	// SetUsage records what the attempt consumed. It overrides the usage
	// summed from the spans the body opened.
	SetUsage(u Usage)
	// SetSummary records a short summary of the attempt (anything
	// JSON-encodable, at most 4 KiB encoded), sent with its complete or its
	// fail and kept on the attempt for timelines and audits; the flow never
	// reads it. A later call replaces an earlier one.
	SetSummary(v any) error
	// Logger is the worker's logger with run, workflow, step, attempt,
	// worker and trace_id bound.
	Logger() *slog.Logger
	// Resumed reports whether the step was interrupted (Interrupt) and
	// resumed (Client.ResumeStep), and decodes the resume value into v
	// (when not nil). It holds on every attempt until the step completes
	// or interrupts again.
	Resumed(v any) (bool, error)
	// Interrupted reports, on a resumed attempt, the payload the step
	// last interrupted with, decoded into v (when not nil).
	Interrupted(v any) (bool, error)
}

// ErrNoValue is reported by StepContext.Output and State for a step
// output or state key that is not there.
var ErrNoValue = errors.New("cairn: no such value")

// stepCtx implements StepContext for one attempt.
type stepCtx struct {
	context.Context
	info    StepInfo
	input   json.RawMessage
	outputs map[string]json.RawMessage
	state   map[string]json.RawMessage
	log     *slog.Logger
	usage   *usageAcc
	// payload reads a value stored by reference (payloads.go); nil when
	// the step has none to read.
	payload func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error)
	refMu   sync.Mutex // guards the resolution of outputs and state

	mu       sync.Mutex
	patch    map[string]json.RawMessage
	attrs    map[string]json.RawMessage
	explicit *Usage
	summary  json.RawMessage

	// att and worker are the attempt the body runs for and its worker
	// (a function's driver checkpoints through them: function.go).
	att    *attempt
	worker *Worker

	// resumed, resume and interrupt are the lease's (interrupt.go).
	resumed           bool
	resume, interrupt json.RawMessage
}

type stepCtxKey struct{}

// StepFromContext returns the StepContext a context derives from: a body
// that wrapped its context (context.WithTimeout, a tracer's Start) finds
// its step again.
func StepFromContext(ctx context.Context) (StepContext, bool) {
	s, ok := ctx.Value(stepCtxKey{}).(*stepCtx)
	return s, ok
}

func (s *stepCtx) Value(key any) any {
	if key == (stepCtxKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func (s *stepCtx) Info() StepInfo         { return s.info }
func (s *stepCtx) IdempotencyKey() string { return s.info.IdempotencyKey }
func (s *stepCtx) Input() json.RawMessage { return s.input }
func (s *stepCtx) Outputs() map[string]json.RawMessage {
	for k := range s.outputs {
		s.resolved(s.outputs, k)
	}
	return maps.Clone(s.outputs)
}
func (s *stepCtx) StateMap() map[string]json.RawMessage {
	for k := range s.state {
		s.resolved(s.state, k)
	}
	return maps.Clone(s.state)
}

// resolved returns m[k], first replacing it by its value when it is a
// reference to a payload. A value that cannot be read is left a
// reference (the error is logged; Output and State report it).
func (s *stepCtx) resolved(m map[string]json.RawMessage, k string) (json.RawMessage, error) {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	raw := m[k]
	if s.payload == nil || !isRef(raw) {
		return s.opened(m, k, raw)
	}
	b, err := s.payload(s, raw)
	if err != nil {
		s.log.Warn("reading a value stored by reference failed", "key", k, "err", err)
		return raw, err
	}
	return s.opened(m, k, b)
}

// opened sets m[k] to raw with its encrypted values decoded (codec.go).
func (s *stepCtx) opened(m map[string]json.RawMessage, k string, raw json.RawMessage) (json.RawMessage, error) {
	b, err := s.openStored(raw)
	if err != nil {
		return raw, err
	}
	m[k] = b
	return b, nil
}
func (s *stepCtx) Logger() *slog.Logger { return s.log }

func (s *stepCtx) Output(step string, v any) error {
	return s.decode(s.outputs, step, v, "step "+step+" has no output this step can see (is it in after, directly or not?)", "the output of step "+step)
}

func (s *stepCtx) State(key string, v any) error {
	return s.decode(s.state, key, v, "state key "+key+" is not set", "state key "+key)
}

// decode decodes m[k] into v, read through its reference if it is one;
// missing says why an absent k has no value, what names the value in a
// failed read.
func (s *stepCtx) decode(m map[string]json.RawMessage, k string, v any, missing, what string) error {
	if _, ok := m[k]; !ok {
		return fmt.Errorf("%w: %s", ErrNoValue, missing)
	}
	raw, err := s.resolved(m, k)
	if err != nil {
		return fmt.Errorf("cairn: reading %s: %w", what, err)
	}
	return decodeValue(raw, v)
}

func decodeValue(raw json.RawMessage, v any) error {
	if p, ok := v.(*json.RawMessage); ok {
		*p = raw
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("cairn: decode into non-pointer %T", v)
	}
	return json.Unmarshal(raw, v)
}

func (s *stepCtx) SetStatePatch(patch map[string]any) error {
	return s.merge(&s.patch, patch, "state patch")
}

// merge encodes m's values into *dst, replacing its keys'.
func (s *stepCtx) merge(dst *map[string]json.RawMessage, m map[string]any, what string) error {
	enc, err := toJSONMap(m)
	if err != nil {
		return fmt.Errorf("cairn: %s: %w", what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if *dst == nil {
		*dst = map[string]json.RawMessage{}
	}
	maps.Copy(*dst, enc)
	return nil
}

func (s *stepCtx) SetAttributes(attrs map[string]any) error {
	return s.merge(&s.attrs, attrs, "attributes")
}

// attributesOf are the attributes a's body set, for its complete.
func attributesOf(a *attempt) *map[string]json.RawMessage {
	s := a.body.Load()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.attrs) == 0 {
		return nil
	}
	m := maps.Clone(s.attrs)
	return &m
}

func (s *stepCtx) SetState(key string, value any) error {
	return s.SetStatePatch(map[string]any{key: value})
}

func (s *stepCtx) SetUsage(u Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.explicit = &u
}

func (s *stepCtx) SetSummary(v any) error {
	raw, err := toJSON(v)
	if err != nil {
		return err
	}
	if len(raw) > cairn.MaxSummaryBytes {
		return fmt.Errorf("cairn: a summary of %d bytes is over the %d-byte limit", len(raw), cairn.MaxSummaryBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary = raw
	return nil
}

// summaryOf is the summary the body of a set, if any.
func summaryOf(a *attempt) json.RawMessage {
	s := a.body.Load()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summary
}

// ended returns the state patch and the usage to report: copies, as the
// drain may call it while the body still runs.
func (s *stepCtx) ended() (map[string]json.RawMessage, Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	patch := maps.Clone(s.patch)
	if s.explicit != nil {
		return patch, *s.explicit
	}
	return patch, s.usage.total()
}
