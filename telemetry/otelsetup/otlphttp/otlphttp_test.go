package otlphttp_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-dev/cairn/telemetry/otelsetup"
	"github.com/cairn-dev/cairn/telemetry/otelsetup/otlphttp"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// collector is an OTLP/HTTP collector that decodes what it receives with
// the collector's own message type. It answers the first fail requests
// 503.
type collector struct {
	mu     sync.Mutex
	fail   int
	got    []*coltracepb.ExportTraceServiceRequest
	header http.Header
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
		return
	}
	if c.fail > 0 {
		c.fail--
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.got = append(c.got, &req)
	c.header = r.Header.Clone()
}

func TestExport(t *testing.T) {
	c := &collector{fail: 1}
	srv := httptest.NewServer(c)
	defer srv.Close()
	ctx := context.Background()

	// Through otelsetup, as the Lambda bootstraps do: the variables pick
	// the endpoint, the headers and the compression.
	p, err := otelsetup.Setup(ctx, otelsetup.Options{ServiceName: "cairn-test", Getenv: env(
		"OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/",
		"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=a%20b,x-other=1",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip",
	)})
	if err != nil || !p.T.Tracing() || p.Traces != "otlp http/protobuf" {
		t.Fatalf("Setup: %+v, %v", p, err)
	}
	p.Shutdown(ctx)

	exp, err := otlphttp.New(ctx, env(
		"OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/",
		"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=a%20b,x-other=1",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip",
	))
	if err != nil {
		t.Fatal(err)
	}
	if exp.URL() != srv.URL+"/v1/traces" {
		t.Errorf("URL %s", exp.URL())
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	_, span := tp.Tracer("cairn/test", trace.WithInstrumentationVersion("1.2")).Start(
		trace.ContextWithRemoteSpanContext(ctx, parent), "run greet", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("cairn.run", "r1"), attribute.Int64("n", 3), attribute.StringSlice("tags", []string{"a", "b"})))
	span.AddEvent("retry", trace.WithAttributes(attribute.Bool("last", true)))
	span.SetStatus(codes.Error, "boom")
	span.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) != 1 || c.fail != 0 {
		t.Fatalf("collector got %d requests (503s left %d); want one after a retry", len(c.got), c.fail)
	}
	if c.header.Get("X-Api-Key") != "a b" || c.header.Get("X-Other") != "1" {
		t.Errorf("headers %v", c.header)
	}
	rs := c.got[0].ResourceSpans
	if len(rs) != 1 || len(rs[0].ScopeSpans) != 1 || len(rs[0].ScopeSpans[0].Spans) != 1 {
		t.Fatalf("request %v", c.got[0])
	}
	sc := rs[0].ScopeSpans[0]
	if sc.Scope.Name != "cairn/test" || sc.Scope.Version != "1.2" {
		t.Errorf("scope %v", sc.Scope)
	}
	s := sc.Spans[0]
	tid, psid := parent.TraceID(), parent.SpanID()
	if s.Name != "run greet" || s.Kind != tracepb.Span_SPAN_KIND_SERVER || string(s.TraceId) != string(tid[:]) ||
		string(s.ParentSpanId) != string(psid[:]) || len(s.SpanId) != 8 || s.StartTimeUnixNano == 0 || s.EndTimeUnixNano < s.StartTimeUnixNano ||
		s.Status.Code != tracepb.Status_STATUS_CODE_ERROR || s.Status.Message != "boom" ||
		s.Flags&uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK) == 0 {
		t.Errorf("span %v", s)
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	if !strings.Contains(attrs["cairn.run"], "r1") || !strings.Contains(attrs["n"], "3") || !strings.Contains(attrs["tags"], `"b"`) {
		t.Errorf("attributes %v", attrs)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "retry" || !s.Events[0].Attributes[0].Value.GetBoolValue() {
		t.Errorf("events %v", s.Events)
	}
	if err := exp.ExportSpans(ctx, nil); err == nil {
		t.Error("an export after Shutdown succeeded")
	}
}

func TestExportFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such tenant", http.StatusUnauthorized)
	}))
	defer srv.Close()
	exp, err := otlphttp.New(context.Background(), env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/custom"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	_, span := tp.Tracer("t").Start(context.Background(), "s")
	span.End()
	ro := span.(sdktrace.ReadOnlySpan)
	err = exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{ro})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "/custom") {
		t.Errorf("a 401 answered %v; want the status and the URL", err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, bad := range [][2]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"},
		{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/no/cert.pem"},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/no/ca.pem"},
	} {
		if _, err := otlphttp.New(context.Background(), env(bad[0], bad[1])); err == nil {
			t.Errorf("no error for %s=%s", bad[0], bad[1])
		}
	}
}

// TestSetupWithoutTheRest: a build that links only this exporter says so
// when asked for gRPC or for metrics, rather than starting without them.
func TestSetupWithoutTheRest(t *testing.T) {
	ctx := context.Background()
	if got := otelsetup.Protocols(); len(got) != 1 || got[0] != "http/protobuf" {
		t.Fatalf("Protocols() = %v", got)
	}
	_, err := otelsetup.Setup(ctx, otelsetup.Options{Getenv: env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")})
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") || !strings.Contains(err.Error(), "http/protobuf only") {
		t.Errorf("grpc: %v", err)
	}
	_, err = otelsetup.Setup(ctx, otelsetup.Options{Metrics: true, Getenv: env()})
	if err == nil || !strings.Contains(err.Error(), "CAIRN_METRICS") {
		t.Errorf("metrics: %v", err)
	}
	p, err := otelsetup.Setup(ctx, otelsetup.Options{Getenv: env()})
	if err != nil || p.T != nil {
		t.Errorf("off: %+v, %v", p, err)
	}
}
