package testutil

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Server is what ServeWorker serves: an sdk.Worker (named by its methods,
// so that the sdk's own tests can use this package).
type Server interface {
	Serve(ctx context.Context) error
	Ready() <-chan struct{}
}

// ServeWorker serves w and returns once it is ready, failing the test if
// it stops first or is not ready within the given time; stop stops it and
// waits for Serve to return, as the test's end does.
func ServeWorker(t testing.TB, w Server, within time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	select {
	case <-w.Ready():
	case err := <-done:
		done <- err // for stop
		t.Fatalf("the worker stopped before it was ready: %v", err)
	case <-time.After(within):
		t.Fatalf("worker not ready within %v", within)
	}
	return stop
}
