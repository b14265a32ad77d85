// Package telemetry is cairn's OpenTelemetry instrumentation: the spans
// of runs and attempts (recorded by whichever engine instance sees them
// end, with derived ids: see ids.go), server spans per API operation,
// blob spans, and the engine's metrics. A nil *T is valid and does
// nothing, which is what an engine gets when telemetry is off: every hook
// is a nil check.
//
// It speaks the OpenTelemetry API only: package telemetry/otelsetup
// builds a T on the SDK from the standard OTEL_* variables (an OTLP trace
// exporter) and, when asked, a Prometheus exporter for metrics, and only
// the process shells import it.
package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn"
)

// ScopeName is the instrumentation scope of cairn's spans and metrics.
const ScopeName = "github.com/cairn-dev/cairn"

// T is the engine's telemetry: a tracer (nil when traces are off) and
// the metric instruments (nil when metrics are off).
type T struct {
	tracer trace.Tracer
	m      *instruments
}

// New returns telemetry on tp and mp; either may be nil (that signal is
// off). tp must generate ids with IDGenerator (otelsetup.NewTracerProvider
// does), or the engine's run and attempt spans get random ids and the
// chain a lease's traceparent names is broken.
func New(tp trace.TracerProvider, mp metric.MeterProvider) (*T, error) {
	t := &T{}
	if tp != nil {
		t.tracer = tp.Tracer(ScopeName)
	}
	if mp != nil {
		m, err := newInstruments(mp.Meter(ScopeName))
		if err != nil {
			return nil, err
		}
		t.m = m
	}
	if t.tracer == nil && t.m == nil {
		return nil, nil
	}
	return t, nil
}

// Tracing reports whether t records spans.
func (t *T) Tracing() bool { return t != nil && t.tracer != nil }

// Tracer returns t's tracer, or a no-op one.
func (t *T) Tracer() trace.Tracer {
	if t.Tracing() {
		return t.tracer
	}
	return noopTracer
}

// Run describes the run a journal entry belongs to.
type Run struct {
	ID, Workflow, Version string
	// Parent is the traceparent stored with the run (ParentOf at start).
	Parent    string
	CreatedAt time.Time
}

// Observe records the journal entries one commit added to run r:
// attempt finds an entry's attempt in the record (nil when it has none).
// An attempt's end is counted once even when the commit journals it
// twice (an outcome and the step's end).
func (t *T) Observe(r Run, added []cairn.JournalEntry, attempt func(step string, n int) *cairn.Attempt) {
	if t == nil {
		return
	}
	var ended map[[2]any]bool
	for _, j := range added {
		var a, prev *cairn.Attempt
		done := false
		if j.Attempt > 0 && j.Step != "" {
			a = attempt(j.Step, j.Attempt)
			if j.Attempt > 1 {
				prev = attempt(j.Step, j.Attempt-1)
			}
			if endsAttempt(j.Type) { // not a claim, a start, a function's operation
				if ended == nil {
					ended = map[[2]any]bool{}
				}
				k := [2]any{j.Step, j.Attempt}
				done = ended[k]
				ended[k] = true
			}
		}
		t.entry(r, j, a, done)
		if a != nil && !done && prev != nil && prev.Outcome == cairn.OutcomeSuspended && ended[[2]any{j.Step, j.Attempt}] {
			t.suspendedSpan(r, j, prev, a)
		}
	}
}

// Journal observes one journal entry a commit added to a run. attempt is
// the attempt record the entry names (nil when none): an entry that ends
// an attempt records the attempt's span. ended reports whether an
// earlier entry of the same commit already ended this attempt (a lost
// lease followed by its retry): its span is recorded once.
func (t *T) entry(r Run, j cairn.JournalEntry, attempt *cairn.Attempt, ended bool) {
	if t == nil {
		return
	}
	if t.m != nil {
		t.m.journal(r, j, attempt, ended)
	}
	if t.tracer == nil {
		return
	}
	switch j.Type {
	case cairn.JournalRunCompleted, cairn.JournalRunFailed, cairn.JournalRunCancelled, cairn.JournalRunTimedOut:
		t.runSpan(r, j)
	case cairn.JournalStepCompleted, cairn.JournalStepFailed, cairn.JournalStepRequeued,
		cairn.JournalStepRetryScheduled, cairn.JournalLeaseLost, cairn.JournalStepSuspended: // endsAttempt
		if attempt != nil && attempt.ClaimedAt != nil && j.Attempt > 0 && !ended {
			t.stepSpan(r, j, attempt)
		}
	}
}

// record records a span that already ended, with the ids it was named by.
func (t *T) record(parent trace.SpanContext, ids forcedIDs, name string, start, end time.Time, status codes.Code, msg string, attrs ...attribute.KeyValue) {
	ctx := context.Background()
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx = context.WithValue(ctx, forcedKey{}, ids)
	_, sp := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if status != codes.Unset {
		sp.SetStatus(status, msg)
	}
	sp.End(trace.WithTimestamp(end))
}

func (t *T) runSpan(r Run, j cairn.JournalEntry) {
	tid, parent := runTrace(r.ID, r.Parent)
	status, msg := codes.Ok, ""
	if j.Type != cairn.JournalRunCompleted {
		status = codes.Error
		msg = string(j.Type)
		if j.Error != nil {
			msg = j.Error.Class + ": " + j.Error.Message
		}
	}
	t.record(parent, forcedIDs{tid, runSpanID(r.ID)}, "run "+r.Workflow, r.CreatedAt, j.At, status, msg,
		attribute.String("cairn.run", r.ID), attribute.String("cairn.workflow", r.Workflow),
		attribute.String("cairn.version", r.Version), attribute.String("cairn.run.status", runStatus(j.Type)))
}

func (t *T) stepSpan(r Run, j cairn.JournalEntry, a *cairn.Attempt) {
	parent := RunSpanContext(r.ID, r.Parent)
	end := j.At
	if a.EndedAt != nil {
		end = *a.EndedAt
	}
	status, msg := codes.Ok, ""
	if j.Type != cairn.JournalStepCompleted && j.Type != cairn.JournalStepSuspended {
		status, msg = codes.Error, string(j.Type)
		if a.Error != nil {
			msg = a.Error.Class + ": " + a.Error.Message
		}
	}
	attrs := []attribute.KeyValue{
		attribute.String("cairn.run", r.ID), attribute.String("cairn.workflow", r.Workflow),
		attribute.String("cairn.step", j.Step), attribute.Int("cairn.attempt", j.Attempt),
		attribute.String("cairn.worker", a.Worker), attribute.String("cairn.outcome", string(a.Outcome)),
	}
	if a.Error != nil {
		attrs = append(attrs, attribute.String("cairn.error.class", a.Error.Class))
	}
	if a.StartedAt != nil {
		attrs = append(attrs, attribute.String("cairn.started_at", a.StartedAt.UTC().Format(time.RFC3339Nano)))
	}
	t.record(parent, forcedIDs{parent.TraceID(), stepSpanID(r.ID, j.Step, j.Attempt)}, "attempt "+j.Step, *a.ClaimedAt, end, status, msg, attrs...)
}

// suspendedSpan records the time a function step spent suspended between
// attempt prev (which suspended: a sleep, a wait, an invoke, a backoff)
// and attempt a, which went on: from prev's end to a's claim, under the
// run's span.
func (t *T) suspendedSpan(r Run, j cairn.JournalEntry, prev, a *cairn.Attempt) {
	if prev.EndedAt == nil || a.ClaimedAt == nil {
		return
	}
	parent := RunSpanContext(r.ID, r.Parent)
	t.record(parent, forcedIDs{parent.TraceID(), suspendedSpanID(r.ID, j.Step, prev.N)}, "suspended "+j.Step, *prev.EndedAt, *a.ClaimedAt, codes.Unset, "",
		attribute.String("cairn.run", r.ID), attribute.String("cairn.workflow", r.Workflow),
		attribute.String("cairn.step", j.Step), attribute.Int("cairn.attempt", prev.N), attribute.Int("cairn.resumed_by", a.N))
}

func runStatus(t cairn.JournalType) string {
	switch t {
	case cairn.JournalRunCompleted:
		return string(cairn.RunCompleted)
	case cairn.JournalRunFailed:
		return string(cairn.RunFailed)
	case cairn.JournalRunCancelled:
		return string(cairn.RunCancelled)
	case cairn.JournalRunTimedOut:
		return string(cairn.RunTimedOut)
	}
	return ""
}
