package local_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/internal/local"
)

// TestServe: the server answers, then stops with nil when its context
// ends.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- local.Serve(ctx, local.Options{
			Addr: "127.0.0.1:0", Store: mem.New(), API: api.Config{DevMode: true}, ReapEvery: 10 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready:  func(a string) { addr <- a },
		})
	}()
	var at string
	select {
	case at = <-addr:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("not serving")
	}
	resp, err := http.Get("http://" + at + api.BasePath + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop")
	}
}
