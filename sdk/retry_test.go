package sdk

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRetriesWhatChangedNothing: a 503 or 429 (nothing applied) is sent
// again, honouring Retry-After, body included; a GET's server error too;
// a write's other errors are not.
func TestRetriesWhatChangedNothing(t *testing.T) {
	var hits, bodies atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		if r.ContentLength > 0 {
			bodies.Add(1)
		}
		if n <= 2 {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(503)
			w.Write([]byte(`{"status":503,"title":"Service Unavailable","detail":"the store is unreachable"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"run":{"id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","workflow":"w","version":"1","status":"running","state":{},"steps":[],"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","usage":{},"steps_done":0,"steps_total":1},"existed":false}`))
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Start(ctx, "w", StartOptions{IdempotencyKey: "k"}); err != nil {
		t.Fatalf("start after two 503s: %v", err)
	}
	if hits.Load() != 3 || bodies.Load() != 3 {
		t.Fatalf("%d sends, %d with a body; want 3 and 3", hits.Load(), bodies.Load())
	}

	// A 500 of a start is not retried: something may have happened. A
	// GET changes nothing: its 500 (a store read that failed) is sent
	// again, up to 4 sends in all.
	hits.Store(0)
	srv500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(500)
	}))
	defer srv500.Close()
	c500, _ := NewClient(srv500.URL)
	if _, err := c500.Start(ctx, "w", StartOptions{}); err == nil || hits.Load() != 1 {
		t.Fatalf("start, 500: err %v after %d sends, want an error after 1", err, hits.Load())
	}
	hits.Store(0)
	if _, err := c500.Get(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); err == nil || hits.Load() != 4 {
		t.Fatalf("get, 500: err %v after %d sends, want an error after 4", err, hits.Load())
	}

	// A 429 applied nothing either: a start is sent again.
	hits.Store(0)
	srv429 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(429)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"run":{"id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","workflow":"w","version":"1","status":"running","state":{},"steps":[],"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","usage":{},"steps_done":0,"steps_total":1},"existed":false}`))
	}))
	defer srv429.Close()
	c429, _ := NewClient(srv429.URL)
	if _, err := c429.Start(ctx, "w", StartOptions{}); err != nil || hits.Load() != 2 {
		t.Fatalf("start, 429 then 201: err %v after %d sends, want success after 2", err, hits.Load())
	}

	// A refused connection sent nothing: retried, then reported.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	cr, _ := NewClient("http://" + addr)
	begin := time.Now()
	if _, err := cr.Get(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); err == nil {
		t.Fatal("no error from a server that is not there")
	}
	if took := time.Since(begin); took < 100*time.Millisecond || took > 3*time.Second {
		t.Fatalf("refused connections took %v: retried with backoff?", took)
	}
}
