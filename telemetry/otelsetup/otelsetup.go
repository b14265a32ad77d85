// Package otelsetup builds cairn's telemetry from the standard OTEL_*
// variables: the OpenTelemetry SDK's providers, an OTLP trace exporter
// (gRPC or HTTP) and, when asked, a Prometheus exporter for the metrics.
// Only the process shells (internal/app, cmd) import it, so that what
// imports the engine, the API or package telemetry does not link the
// exporters.
package otelsetup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn/telemetry"
)

// Options select what Setup turns on.
type Options struct {
	// Metrics serves the engine's metrics for Prometheus (Provider.Metrics).
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
// than otlp or none is an error, not a silent no-op.
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
		var exp sdktrace.SpanExporter
		switch proto {
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		case "", "http/protobuf":
			proto = "http/protobuf"
			exp, err = otlptracehttp.New(ctx)
		default:
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", proto)
		}
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp = NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.shutdown = append(p.shutdown, tp.Shutdown)
		p.Traces = "otlp " + proto
	}
	var mp *sdkmetric.MeterProvider
	if o.Metrics {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			p.Shutdown(ctx)
			return nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
		p.shutdown = append(p.shutdown, mp.Shutdown)
		p.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
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
