package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// The engine is stateless: the span of a run and the span of each
// attempt are recorded when they end, by whichever instance sees the end,
// long after (and far from) the request that began them. Their ids are
// therefore derived, not drawn: every instance, and the lease a worker
// holds, names the same span without asking anyone.
//
//	trace id  = the caller's (POST /runs with a traceparent), else sha256(run)[:16]
//	run span  = sha256(run + "/run")[:8]
//	step span = sha256(run/step/attempt)[:8]   (what the lease's traceparent names)

// RunTraceID is the trace id of a run started without a caller's trace.
func RunTraceID(run string) trace.TraceID {
	s := sha256.Sum256([]byte(run))
	var t trace.TraceID
	copy(t[:], s[:16])
	return t
}

func runSpanID(run string) trace.SpanID {
	s := sha256.Sum256([]byte(run + "/run"))
	var id trace.SpanID
	copy(id[:], s[:8])
	return id
}

func stepSpanID(run, step string, n int) trace.SpanID {
	s := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", run, step, n))
	var id trace.SpanID
	copy(id[:], s[:8])
	return id
}

func suspendedSpanID(run, step string, n int) trace.SpanID {
	s := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d/suspended", run, step, n))
	var id trace.SpanID
	copy(id[:], s[:8])
	return id
}

// ParentOf returns the W3C traceparent of the span ctx carries (the
// caller's, or the API's server span), or "" when it carries none. The
// engine stores it with a new run: the run's span is its child.
func ParentOf(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return formatTraceParent(sc.TraceID(), sc.SpanID())
}

func formatTraceParent(t trace.TraceID, s trace.SpanID) string {
	return "00-" + t.String() + "-" + s.String() + "-01"
}

// parseTraceParent reads a version-00 traceparent; ok is false for
// anything else.
func parseTraceParent(s string) (trace.TraceID, trace.SpanID, bool) {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return trace.TraceID{}, trace.SpanID{}, false
	}
	t, err1 := trace.TraceIDFromHex(s[3:35])
	sp, err2 := trace.SpanIDFromHex(s[36:52])
	if err1 != nil || err2 != nil {
		return trace.TraceID{}, trace.SpanID{}, false
	}
	return t, sp, true
}

// runTrace returns the trace id of a run and the span context of its
// parent (invalid when the run began its own trace).
func runTrace(run, parent string) (trace.TraceID, trace.SpanContext) {
	if t, s, ok := parseTraceParent(parent); ok {
		return t, trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, TraceFlags: trace.FlagsSampled, Remote: true})
	}
	return RunTraceID(run), trace.SpanContext{}
}

// RunSpanContext is the span context of a run's span; parent is the
// traceparent stored with the run (ParentOf at its start), or "".
func RunSpanContext(run, parent string) trace.SpanContext {
	t, _ := runTrace(run, parent)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: runSpanID(run), TraceFlags: trace.FlagsSampled, Remote: true})
}

// StepTraceParent is the W3C traceparent of attempt n of a run's step:
// the span the engine records for the attempt, which a worker's body
// span is a child of. parent is the traceparent stored with the run.
func StepTraceParent(run, parent, step string, n int) string {
	t, _ := runTrace(run, parent)
	return formatTraceParent(t, stepSpanID(run, step, n))
}

// forcedIDs are the ids the next span started with this context takes.
type forcedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

type forcedKey struct{}

// IDGenerator returns the span id generator a TracerProvider must use for
// the engine's derived spans (run and attempt spans) to take their
// derived ids: it hands out random ids, except to a span the engine
// starts with ids of its own. otelsetup.NewTracerProvider installs it.
func IDGenerator() IDs { return idGen{} }

// IDs is the SDK's id generator (sdktrace.IDGenerator), spelled out here
// so that this package does not link the SDK.
type IDs interface {
	NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID)
	NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID
}

type idGen struct{}

func (idGen) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(forcedKey{}).(forcedIDs); ok {
		return f.trace, f.span
	}
	var b [24]byte
	randomFill(b[:])
	var t trace.TraceID
	var s trace.SpanID
	copy(t[:], b[:16])
	copy(s[:], b[16:])
	return t, s
}

func (idGen) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(forcedKey{}).(forcedIDs); ok {
		return f.span
	}
	var s trace.SpanID
	randomFill(s[:])
	return s
}

func randomFill(b []byte) {
	for {
		rand.Read(b)
		if binary.BigEndian.Uint64(b[:8]) != 0 { // an all-zero id is invalid
			return
		}
	}
}
