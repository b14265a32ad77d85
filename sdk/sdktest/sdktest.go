// Package sdktest starts a cairn server inside a test: the API, the
// reaper and in-process notifications (what `cairn dev` runs) on
// 127.0.0.1, storing in a directory of the test's own. Workers and
// clients of package sdk talk to it over HTTP as they would to a deployed
// server.
//
//	srv := sdktest.Start(t, sdktest.Options{})
//	c, _ := sdk.NewClient(srv.URL)
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
)

// Options configure a test server. Zero fields take fast test defaults.
type Options struct {
	// Engine tunes the engine. Zero durations take test defaults: a 2s
	// lease TTL, 500ms heartbeats, 200ms fallback scans, and unclaimed
	// work announced again after 500ms.
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
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- local.Serve(ctx, local.Options{
			Addr: "127.0.0.1:0", Store: o.Store, Engine: o.Engine, ReapEvery: o.ReapEvery, Logger: o.Logger,
			API:   api.Config{Keys: o.Keys, DevMode: len(o.Keys) == 0},
			Ready: func(a string) { addr <- a },
		})
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
		return &Server{URL: "http://" + a, Store: o.Store}
	case err := <-done:
		cancel()
		t.Fatalf("sdktest: server did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("sdktest: server did not start within 10s")
	}
	return nil
}
