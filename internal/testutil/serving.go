package testutil

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Serving runs serve in the background: a server's function that serves
// until its context ends, calling ready with its address once it
// listens. Serving returns that address, failing the test if serve
// returns first or is not ready within 10 seconds. stop ends serve's
// context and returns what serve returned (failing the test if it has
// not returned 10 seconds later); the test's end stops it too.
func Serving(t testing.TB, serve func(ctx context.Context, ready func(addr string)) error) (addr string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, func(a string) { addrs <- a }) }()
	stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop within 10 s of its context's end")
			return nil
		}
	})
	t.Cleanup(func() { stop() })
	select {
	case addr = <-addrs:
	case err := <-done:
		done <- err // for stop
		t.Fatalf("the server returned before serving: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server is not serving after 10 s")
	}
	return addr, stop
}

// GetOK fails the test unless a GET of url answers 200.
func GetOK(t testing.TB, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, want 200", url, resp.StatusCode)
	}
}
