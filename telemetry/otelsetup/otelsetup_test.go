package otelsetup_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/telemetry/otelsetup"
	_ "github.com/cairn-dev/cairn/telemetry/otelsetup/exporters" // as cmd/cairn
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestSetup(t *testing.T) {
	ctx := context.Background()

	// Nothing asked for: no telemetry at all.
	p, err := otelsetup.Setup(ctx, otelsetup.Options{Getenv: env()})
	if err != nil || p.T != nil || p.Metrics != nil || p.Traces != "" {
		t.Fatalf("off: %+v, %v", p, err)
	}

	// Metrics only: a T and a /metrics handler that serves the engine's metrics.
	p, err = otelsetup.Setup(ctx, otelsetup.Options{Metrics: true, Getenv: env()})
	if err != nil || p.T == nil || p.Metrics == nil || p.T.Tracing() {
		t.Fatalf("metrics: %+v, %v", p, err)
	}
	rec := httptest.NewRecorder()
	p.Metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/metrics: %d", rec.Code)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Error(err)
	}

	// An OTLP endpoint turns traces on, over HTTP unless told otherwise.
	p, err = otelsetup.Setup(ctx, otelsetup.Options{Getenv: env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")})
	if err != nil || !p.T.Tracing() || p.Traces != "otlp http/protobuf" {
		t.Fatalf("traces: %+v, %v", p, err)
	}
	p.Shutdown(ctx)

	for _, bad := range []func(string) string{
		env("OTEL_TRACES_EXPORTER", "zipkin"),
		env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
	} {
		if _, err := otelsetup.Setup(ctx, otelsetup.Options{Getenv: bad}); err == nil || !strings.Contains(err.Error(), "OTEL_") {
			t.Errorf("want an error naming the variable, got %v", err)
		}
	}
}

func TestTracesEnabled(t *testing.T) {
	for _, c := range []struct {
		env  func(string) string
		want bool
	}{
		{env(), false},
		{env("OTEL_TRACES_EXPORTER", "otlp"), true},
		{env("OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"), false},
		{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"), true},
		{env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://x"), true},
	} {
		if got := otelsetup.TracesEnabled(c.env); got != c.want {
			t.Errorf("TracesEnabled = %v, want %v", got, c.want)
		}
	}
}
