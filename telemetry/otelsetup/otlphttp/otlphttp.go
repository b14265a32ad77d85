// Package otlphttp is an OTLP trace exporter over HTTP (binary protobuf,
// POST /v1/traces) that links no gRPC. Importing it registers it with
// package otelsetup for OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, the
// default:
//
//	import _ "github.com/cairn-dev/cairn/telemetry/otelsetup/otlphttp"
//
// The Lambda bootstraps do. The OpenTelemetry project's own HTTP exporter
// (which package exporters registers) imports gRPC for its configuration
// types and its generated service code, about 7 MB of a binary that never
// speaks gRPC. This one reads the same variables
// (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT,
// _COMPRESSION, _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY) and
// retries what the specification says is retryable (429, 502, 503, 504)
// until the export's timeout.
package otlphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cairn-dev/cairn/telemetry/otelsetup"
)

func init() {
	otelsetup.Register("http/protobuf", func(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
		return New(ctx, getenv)
	})
}

// Exporter sends spans to an OTLP/HTTP collector.
type Exporter struct {
	url      string
	headers  map[string]string
	timeout  time.Duration
	gzip     bool
	client   *http.Client
	shutdown atomic.Bool
}

// New returns an exporter configured by the OTEL_EXPORTER_OTLP_* variables
// read with getenv [os.Getenv]; a signal's own variable
// (OTEL_EXPORTER_OTLP_TRACES_*) wins over the general one.
func New(_ context.Context, getenv func(string) string) (*Exporter, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	get := func(name string) (string, string) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return "OTEL_EXPORTER_OTLP_TRACES_" + name, v
		}
		return "OTEL_EXPORTER_OTLP_" + name, strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	e := &Exporter{url: "http://localhost:4318/v1/traces", headers: map[string]string{}, timeout: 10 * time.Second}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		e.url = v // the signal's URL, as is
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		e.url = strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	if u, err := url.Parse(e.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL", e.url)
	}
	if name, v := get("HEADERS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			dec, err := url.PathUnescape(strings.TrimSpace(val))
			if !ok || k == "" || err != nil {
				return nil, fmt.Errorf("%s: %q is not key=value", name, kv)
			}
			e.headers[k] = dec
		}
	}
	if name, v := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number of milliseconds", name, v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch name, v := get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("%s=%q: want gzip or none", name, v)
	}
	tlsConfig, err := tlsFrom(get)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConfig != nil {
		tr.TLSClientConfig = tlsConfig
	}
	e.client = &http.Client{Transport: tr}
	return e, nil
}

// tlsFrom is the TLS configuration the certificate variables ask for, nil
// for the system's.
func tlsFrom(get func(string) (string, string)) (*tls.Config, error) {
	caName, ca := get("CERTIFICATE")
	certName, cert := get("CLIENT_CERTIFICATE")
	keyName, key := get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", caName, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s go together", certName, keyName)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// URL is where the spans go.
func (e *Exporter) URL() string { return e.url }

// ExportSpans sends spans in one request (an ExportTraceServiceRequest).
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.shutdown.Load() {
		return errors.New("otlphttp: exporter is shut down")
	}
	if len(spans) == 0 {
		return nil
	}
	// ExportTraceServiceRequest is `repeated ResourceSpans resource_spans
	// = 1`: its encoding is each ResourceSpans as field 1, which spares
	// importing the collector's service package (and gRPC with it).
	var body []byte
	for _, rs := range resourceSpans(spans) {
		b, err := proto.Marshal(rs)
		if err != nil {
			return fmt.Errorf("otlphttp: %w", err)
		}
		body = protowire.AppendTag(body, 1, protowire.BytesType)
		body = protowire.AppendBytes(body, b)
	}
	if e.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("otlphttp: %w", err)
		}
		body = buf.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		retryAfter, err := e.post(ctx, body)
		if err == nil {
			return nil
		}
		if retryAfter < 0 {
			return err
		}
		if retryAfter > 0 {
			wait = retryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// post sends body once. retryAfter is negative when the error is final,
// else the wait the collector asked for (0 for none).
func (e *Exporter) post(ctx context.Context, body []byte) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("otlphttp: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("otlphttp: %w", err)
		}
		return 0, fmt.Errorf("otlphttp: %w", err) // the collector may come back
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	err = fmt.Errorf("otlphttp: %s answered %s: %q", e.url, resp.Status, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return time.Duration(s) * time.Second, err
		}
		return 0, err
	}
	return -1, err
}

// Shutdown stops the exporter: later exports fail.
func (e *Exporter) Shutdown(context.Context) error {
	e.shutdown.Store(true)
	e.client.CloseIdleConnections()
	return nil
}
