package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

var noopTracer = noop.NewTracerProvider().Tracer(ScopeName)

var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// ServerSpan starts the server span of one API operation, a child of the
// caller's traceparent when the request carries one. With tracing off it
// returns ctx and a nil span (End and the setters are then no-ops via
// EndServerSpan).
func (t *T) ServerSpan(ctx context.Context, header func(string) string, op, method, route string) (context.Context, trace.Span) {
	if !t.Tracing() {
		return ctx, nil
	}
	ctx = propagator.Extract(ctx, headerCarrier(header))
	return t.tracer.Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", method), attribute.String("http.route", route),
			attribute.String("cairn.op", op)))
}

// EndServerSpan ends a span from ServerSpan with the answer's status and
// the ids the call named (empty ones are left out).
func EndServerSpan(sp trace.Span, status int, run, step string, attempt int, reason string) {
	if sp == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int("http.response.status_code", status)}
	if run != "" {
		attrs = append(attrs, attribute.String("cairn.run", run))
	}
	if step != "" {
		attrs = append(attrs, attribute.String("cairn.step", step), attribute.Int("cairn.attempt", attempt))
	}
	if reason != "" {
		attrs = append(attrs, attribute.String("cairn.reason", reason))
	}
	sp.SetAttributes(attrs...)
	if status >= 500 {
		sp.SetStatus(codes.Error, http.StatusText(status))
	}
	sp.End()
}

// headerCarrier reads request headers through a getter (Huma's context).
type headerCarrier func(string) string

func (h headerCarrier) Get(k string) string { return h(k) }
func (h headerCarrier) Set(string, string)  {}
func (h headerCarrier) Keys() []string      { return []string{"traceparent", "tracestate", "baggage"} }
