// Package exporters registers every exporter with package otelsetup: the
// OpenTelemetry project's OTLP trace exporters over gRPC and over HTTP,
// and a Prometheus exporter for the metrics (/metrics). A main that
// serves them imports it for its side effect, as cmd/cairn and the
// functions' builds for Cloud Run and laptops do:
//
//	import _ "github.com/cairn-dev/cairn/telemetry/otelsetup/exporters"
//
// It links gRPC and the Prometheus client (about 20 MB of a binary
// between them and what they bring): the Lambda bootstraps import
// package otlphttp instead.
package exporters

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cairn-dev/cairn/telemetry/otelsetup"
)

func init() {
	// These read the OTEL_EXPORTER_OTLP_* variables from the process
	// environment themselves.
	otelsetup.Register("grpc", func(ctx context.Context, _ func(string) string) (sdktrace.SpanExporter, error) {
		return otlptracegrpc.New(ctx)
	})
	otelsetup.Register("http/protobuf", func(ctx context.Context, _ func(string) string) (sdktrace.SpanExporter, error) {
		return otlptracehttp.New(ctx)
	})
	otelsetup.RegisterMetrics(prometheusExporter)
}

// prometheusExporter collects the metrics into a registry of their own,
// served in the Prometheus text format.
func prometheusExporter() (sdkmetric.Reader, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	return exp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
