package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/serve"
)

func newEngine(t *testing.T) *engine.Engine {
	e, err := engine.New(mem.New(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func post(t *testing.T, h http.Handler, path, auth string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, nil)
	if auth != "" {
		r.Header.Set("Authorization", "Bearer "+auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func TestDevModeNeedsNothing(t *testing.T) {
	e := newEngine(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := newHandler(serve.NewReaper(e, serve.ReaperConfig{Logger: log}), api.New(e, api.Config{DevMode: true, Logger: log}).Handler(), nil, true, log)
	if code, body := post(t, h, "/reap", ""); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
}

func TestLambdaHandlerRunsOnePass(t *testing.T) {
	e := newEngine(t)
	h := lambdaHandler(serve.NewReaper(e, serve.ReaperConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	// What EventBridge Scheduler sends by default, and an empty event.
	for _, ev := range []string{`{}`, `{"version":"0","source":"aws.scheduler","detail-type":"Scheduled Event"}`} {
		r, err := h(context.Background(), json.RawMessage(ev))
		if err != nil || r.ListRequests != 1 {
			t.Fatalf("%s: %+v %v", ev, r, err)
		}
	}
}

// TestReaperWithAdminKey: without OIDC the endpoint takes an admin key
// (checked by package api) and nothing else.
func TestReaperWithAdminKey(t *testing.T) {
	e := newEngine(t)
	keys, err := auth.ParseKeys("ops:admin:" + auth.HashSecret("admin-secret") + ",w:worker:" + auth.HashSecret("worker-secret"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := newHandler(serve.NewReaper(e, serve.ReaperConfig{Logger: log}), api.New(e, api.Config{Keys: keys, Logger: log}).Handler(), nil, false, log)
	for _, tc := range []struct {
		auth string
		want int
	}{{"admin-secret", 200}, {"worker-secret", 403}, {"", 401}, {"eyJhbGciOiJSUzI1NiJ9.e30.sig", 401}} {
		for _, path := range reapPaths {
			if code, body := post(t, h, path, tc.auth); code != tc.want {
				t.Errorf("%q %s: %d %s, want %d", tc.auth, path, code, body, tc.want)
			}
		}
	}
}
