// Package sdktest starts a cairn server inside a test: the API, the
// reaper and in-process notifications (what `cairn dev` runs) on
// 127.0.0.1, storing in a directory of the test's own. Workers and
// clients of package sdk talk to it over HTTP as they would to a deployed
// server.
//
//	srv := sdktest.Start(t, sdktest.Options{})
//	c, _ := sdk.NewClient(srv.URL)
//
// Its clock is one the test moves: srv.Advance(time.Hour) makes an hour
// pass for the server — sleeps, wait timeouts, retry backoffs, deadlines
// and schedule ticks due by then fire before it returns — in
// milliseconds. Until moved it is the real time.
package sdktest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/local"
	"github.com/cairn-dev/cairn/internal/testclock"
)

// Options configure a test server. Zero fields take fast test defaults.
type Options struct {
	// Engine tunes the engine. Zero durations take test defaults: a 2s
	// lease TTL, 500ms heartbeats, 200ms fallback scans, and unclaimed
	// work announced again after 500ms. Its Now is the server's Clock
	// (set it to use a clock of your own; Advance then fails the test).
	Engine engine.Config
	// ReapEvery is the reaper's period [100ms].
	ReapEvery time.Duration
	// Store is the bucket [a file store in t.TempDir(), without fsync].
	Store *blob.Bucket
	// Keys are the API keys; none runs in dev mode (no authentication).
	Keys []auth.Key
	// Logger is the server's logger [discarded].
	Logger *slog.Logger
}

// Server is a running test server.
type Server struct {
	// URL is the server's address, such as http://127.0.0.1:41234.
	URL string
	// Store is the bucket it stores in.
	Store *blob.Bucket

	t     testing.TB
	e     *engine.Engine
	clock *testclock.Clock // nil when Options.Engine.Now was the caller's
}

// Now is the server's time: the real time plus how far Advance moved it.
func (s *Server) Now() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock.Now()
}

// Advance moves the server's clock d forward and runs one reaper pass:
// the sleeps, wait timeouts, retry backoffs, deadlines and schedule ticks
// due by the new time have fired when it returns (the steps they make
// ready are then offered to workers as usual). Leases are measured on
// this clock too, so move it while the run waits, not while a step runs
// longer than its lease: that attempt would be recovered as lost. The
// clock never goes back. The API's POST /v1/api/dev/clock does the same
// from any client.
func (s *Server) Advance(d time.Duration) time.Time {
	s.t.Helper()
	if s.clock == nil {
		s.t.Fatal("sdktest: Advance on a server whose Options.Engine.Now is the test's own clock")
	}
	now := s.clock.Advance(d)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.e.ClockMoved(ctx); err != nil {
		s.t.Errorf("sdktest: the reaper pass after advancing the clock: %v", err)
	}
	return now
}

// AwaitHeldClaims returns once the server holds at least n claims waiting
// for work, or ctx ends: act on a worker that is idle and claiming,
// instead of sleeping and hoping.
func (s *Server) AwaitHeldClaims(ctx context.Context, n int) error {
	return s.e.AwaitHeldClaims(ctx, n)
}

// Start starts a server that stops when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Store == nil {
		b, err := file.New(t.TempDir(), file.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		o.Store = b
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Engine.LeaseTTL, 2*time.Second)
	def(&o.Engine.HeartbeatInterval, o.Engine.LeaseTTL/4)
	def(&o.Engine.FallbackInterval, 200*time.Millisecond)
	def(&o.Engine.AnnounceAfter, 500*time.Millisecond)
	def(&o.ReapEvery, 100*time.Millisecond)
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv := &Server{Store: o.Store, t: t}
	if o.Engine.Now == nil {
		srv.clock = &testclock.Clock{}
		o.Engine.Now = srv.clock.Now
	}
	if o.Engine.Logger == nil {
		o.Engine.Logger = o.Logger
	}
	e, err := engine.New(o.Store, o.Engine)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	srv.e = e
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		err := local.Serve(ctx, local.Options{
			Addr: "127.0.0.1:0", Instance: e, ReapEvery: o.ReapEvery, Logger: o.Logger,
			API:   api.Config{Keys: o.Keys, DevMode: len(o.Keys) == 0, TestClock: srv.clock},
			Ready: func(a string) { addr <- a },
		})
		e.Close()
		done <- err
	}()
	select {
	case a := <-addr:
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Error("sdktest: the server did not stop within 15s")
			}
		})
		srv.URL = "http://" + a
		return srv
	case err := <-done:
		cancel()
		t.Fatalf("sdktest: server did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("sdktest: server did not start within 10s")
	}
	return nil
}
