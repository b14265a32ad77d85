package local_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/internal/local"
	"github.com/cairn-dev/cairn/internal/testutil"
)

// TestServe: the server answers, then stops with nil when its context
// ends.
func TestServe(t *testing.T) {
	at, stop := testutil.Serving(t, func(ctx context.Context, ready func(string)) error {
		return local.Serve(ctx, local.Options{
			Addr: "127.0.0.1:0", Store: mem.New(), API: api.Config{DevMode: true}, ReapEvery: 10 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready:  ready,
		})
	})
	testutil.GetOK(t, "http://"+at+api.BasePath+"/healthz")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
