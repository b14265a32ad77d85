// Package otelsetup builds cairn's telemetry from the standard OTEL_*
// variables: the OpenTelemetry SDK's providers, an OTLP trace exporter
// and, when asked, a metrics exporter served at /metrics. Only the process
// shells (internal/app, cmd) import it, so that what imports the engine,
// the API or package telemetry does not link the exporters.
//
// It links no exporter itself: a main registers the ones it ships
// (Register, RegisterMetrics), by importing a package that does, as it
// imports the bucket drivers. cmd/cairn, the image and every build of the
// functions but Lambda's import package exporters (OTLP over gRPC and
// HTTP, Prometheus); the Lambda bootstraps import package otlphttp (OTLP
// over HTTP only, without gRPC), which keeps them small and their cold
// start short (docs/DECISIONS.md).
package otelsetup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn/telemetry"
)

// A TraceExporter makes the span exporter of one OTLP protocol,
// configured by the OTEL_EXPORTER_OTLP_* variables (read with getenv, or
// from the process environment by the OpenTelemetry project's own
// exporters).
type TraceExporter func(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error)

// A MetricsExporter makes the reader the engine's metrics are collected
// by and the handler that serves them at /metrics.
type MetricsExporter func() (sdkmetric.Reader, http.Handler, error)

var (
	regMu   sync.RWMutex
	traces  = map[string]TraceExporter{}
	metrics MetricsExporter
)

// Register makes the trace exporter for protocol ("grpc",
// "http/protobuf") available to Setup. It panics if protocol is
// registered twice: two packages claim it.
func Register(protocol string, f TraceExporter) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := traces[protocol]; dup {
		panic("otelsetup: trace exporter for " + protocol + " registered twice")
	}
	traces[protocol] = f
}

// RegisterMetrics makes the metrics exporter available to Setup. It
// panics if one is registered already.
func RegisterMetrics(f MetricsExporter) {
	regMu.Lock()
	defer regMu.Unlock()
	if metrics != nil {
		panic("otelsetup: metrics exporter registered twice")
	}
	metrics = f
}

// Protocols lists the OTLP protocols registered, sorted.
func Protocols() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	var ps []string
	for p := range traces {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func registered(protocol string) (TraceExporter, MetricsExporter) {
	regMu.RLock()
	defer regMu.RUnlock()
	return traces[protocol], metrics
}

// Options select what Setup turns on.
type Options struct {
	// Metrics serves the engine's metrics for Prometheus (Provider.Metrics);
	// an error if no metrics exporter is registered.
	Metrics bool
	// Getenv reads the OTEL_* variables [os.Getenv].
	Getenv func(string) string
	// ServiceName is service.name when OTEL_SERVICE_NAME is unset ["cairn"].
	ServiceName string
}

// Provider is what Setup built: the telemetry for the engine (nil when
// everything is off), the /metrics handler (nil without Options.Metrics)
// and the shutdown that flushes spans.
type Provider struct {
	T       *telemetry.T
	Metrics http.Handler
	// Traces says where spans go ("" when off), for the start banner.
	Traces   string
	shutdown []func(context.Context) error
}

// Shutdown flushes and stops the exporters.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	for _, f := range p.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// TracesEnabled reports whether the OTEL_* variables ask for traces:
// OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set and the exporter not
// "none". Off by default: with nothing set, no span is ever made.
func TracesEnabled(getenv func(string) string) bool {
	switch strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) {
	case "otlp":
		return true
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	}
	return false
}

// NewTracerProvider is sdktrace.NewTracerProvider with
// telemetry.IDGenerator, which the engine's run and attempt spans need.
func NewTracerProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append(opts, sdktrace.WithIDGenerator(telemetry.IDGenerator()))...)
}

// Setup builds the telemetry the environment asks for. Traces go to an
// OTLP exporter configured by the standard variables
// (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _PROTOCOL: grpc or
// http/protobuf, the default; OTEL_TRACES_SAMPLER; OTEL_BSP_*;
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). An exporter value other
// than otlp or none is an error, not a silent no-op, and so is a protocol
// or metrics asked of a build that did not register them.
func Setup(ctx context.Context, o Options) (*Provider, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ServiceName == "" {
		o.ServiceName = "cairn"
	}
	p := &Provider{}
	switch v := strings.TrimSpace(o.Getenv("OTEL_TRACES_EXPORTER")); v {
	case "", "otlp", "none":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: cairn exports traces with otlp (or none)", v)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(o.ServiceName)))
	if err != nil {
		return nil, err
	}
	if o.Getenv("OTEL_SERVICE_NAME") != "" || strings.Contains(o.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		res = resource.Default() // the environment names the service
	}
	var tp *sdktrace.TracerProvider
	if TracesEnabled(o.Getenv) {
		proto := o.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if proto == "" {
			proto = o.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		if proto == "" {
			proto = "http/protobuf"
		}
		if proto != "grpc" && proto != "http/protobuf" {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", proto)
		}
		newExporter, _ := registered(proto)
		if newExporter == nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: %s", proto, linked(Protocols()))
		}
		exp, err := newExporter(ctx, o.Getenv)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp = NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.shutdown = append(p.shutdown, tp.Shutdown)
		p.Traces = "otlp " + proto
	}
	var mp *sdkmetric.MeterProvider
	if o.Metrics {
		_, newMetrics := registered("")
		if newMetrics == nil {
			p.Shutdown(ctx)
			return nil, errors.New("CAIRN_METRICS: this build serves no /metrics (a Lambda function cannot be scraped)")
		}
		reader, h, err := newMetrics()
		if err != nil {
			p.Shutdown(ctx)
			return nil, fmt.Errorf("metrics exporter: %w", err)
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		p.shutdown = append(p.shutdown, mp.Shutdown)
		p.Metrics = h
	}
	// No typed nils: a nil provider is a signal that is off.
	var tpi trace.TracerProvider
	var mpi metric.MeterProvider
	if tp != nil {
		tpi = tp
	}
	if mp != nil {
		mpi = mp
	}
	t, err := telemetry.New(tpi, mpi)
	if err != nil {
		p.Shutdown(ctx)
		return nil, err
	}
	p.T = t
	return p, nil
}

// linked says which protocols a build exports traces over.
func linked(ps []string) string {
	if len(ps) == 0 {
		return "this build exports no traces"
	}
	return "this build exports traces over " + strings.Join(ps, " and ") + " only"
}
