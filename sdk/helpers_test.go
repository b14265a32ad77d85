package sdk

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// env is a test server and a client of it.
type env struct {
	srv *sdktest.Server
	c   *Client
}

func newEnv(t *testing.T, o sdktest.Options, copts ...ClientOption) *env {
	t.Helper()
	srv := sdktest.Start(t, o)
	c, err := NewClient(srv.URL, copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return &env{srv: srv, c: c}
}

// client returns another client of the same server.
func (e *env) client(t *testing.T, opts ...ClientOption) *Client {
	c, err := NewClient(e.srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// serve runs w until the test ends, and waits until it is ready.
func serve(t testing.TB, w *Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	select {
	case <-w.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("worker did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("worker not ready within 10s")
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = fmt.Errorf("worker did not stop within 30s")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return stop
}

// closedAtEnd returns a channel closed when the test ends: a body held on
// it is let go then.
func closedAtEnd(t *testing.T) chan struct{} {
	c := make(chan struct{})
	t.Cleanup(func() { close(c) })
	return c
}

// stopWithin stops a worker (serve's stop) and fails the test if that
// fails or takes longer than within.
func stopWithin(t *testing.T, stop func() error, within time.Duration) {
	t.Helper()
	t0 := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > within {
		t.Fatalf("shutdown took %v", d)
	}
}

func waitRun(t *testing.T, c *Client, id string, within time.Duration) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	t0 := time.Now()
	r, err := c.Wait(ctx, id)
	if d := time.Since(t0); d > 3*time.Second {
		t.Logf("slow: run %s took %v to end", id, d)
	}
	if err != nil {
		if cur, gerr := c.Get(context.Background(), id); gerr == nil {
			var maps []string
			for _, st := range cur.Steps {
				if st.Map != nil {
					maps = append(maps, fmt.Sprintf("%s: %+v", st.ID, *st.Map))
				}
			}
			if j, jerr := c.Journal(context.Background(), id); jerr == nil {
				for _, en := range j[max(0, len(j)-40):] {
					t.Logf("journal: %s %s %s#%d %s %s", en.At.Format("15:04:05.000"), en.Type, en.Step, en.Attempt, en.Worker, en.Message)
				}
			}
			t.Fatalf("waiting for run %s: %v (status %s, steps %+v, maps %v)", id, err, cur.Status, cur.Steps, maps)
		}
		t.Fatalf("waiting for run %s: %v", id, err)
	}
	return r
}

func start(t *testing.T, c *Client, wf string, o StartOptions) *Run {
	t.Helper()
	r, err := c.Start(context.Background(), wf, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// eventually waits until cond holds, failing the test at within
// (testutil.Eventually, for conditions with nothing more to say).
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, within, what, func() (bool, string) { return cond(), "not yet" })
}

// logRecorder is a slog handler that keeps every record, and writes them
// to the test log while the test runs.
type logRecorder struct {
	mu      sync.Mutex
	records []string
	attrs   []slog.Attr
	parent  *logRecorder
}

func (l *logRecorder) root() *logRecorder {
	if l.parent != nil {
		return l.parent.root()
	}
	return l
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range l.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "stack" {
			fmt.Fprintf(&b, " stack=(%d bytes)", len(a.Value.String()))
		} else {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	root := l.root()
	root.mu.Lock()
	root.records = append(root.records, b.String())
	root.mu.Unlock()
	return nil
}

func (l *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{attrs: append(append([]slog.Attr{}, l.attrs...), as...), parent: l.root()}
}

func (l *logRecorder) WithGroup(string) slog.Handler { return l }

func (l *logRecorder) find(substr string) []string {
	root := l.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	var out []string
	for _, r := range root.records {
		if strings.Contains(r, substr) {
			out = append(out, r)
		}
	}
	return out
}

func (l *logRecorder) dump(t *testing.T) {
	root := l.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	for _, r := range root.records {
		t.Log(r)
	}
}

// roundTripper is an http.RoundTripper made of a function over a real
// transport.
type roundTripper struct {
	fn   func(*http.Request, http.RoundTripper) (*http.Response, error)
	next *http.Transport
}

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return rt.fn(r, rt.next) }

func (rt roundTripper) CloseIdleConnections() { rt.next.CloseIdleConnections() }

// interceptClient returns an HTTP client whose requests pass through fn,
// which may forward them with next.
func interceptClient(fn func(r *http.Request, next http.RoundTripper) (*http.Response, error)) *http.Client {
	next := http.DefaultTransport.(*http.Transport).Clone()
	next.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: roundTripper{fn: fn, next: next}}
}

func quiet() *slog.Logger {
	if os.Getenv("SDK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

func slogOf(h slog.Handler) *slog.Logger { return slog.New(h) }

// recordSpans is a tracer provider whose ended spans rec keeps, shut
// down when the test ends.
func recordSpans(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return rec, tp
}
