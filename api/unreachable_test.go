package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/cairn-dev/cairn/blob/s3"
)

// TestUnreachableStoreIs503: a store whose connections are refused sent
// nothing, so the answer is 503 with Retry-After (retry is safe), never a
// 502 that says something may have been applied.
func TestUnreachableStoreIs503(t *testing.T) {
	// A port nothing listens on: take one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	store, err := s3.New(context.Background(), s3.Options{Bucket: "b", Endpoint: "http://" + addr, UsePathStyle: true,
		Region: "us-east-1", AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newTestAPI(t, store)
	// Not ready while the bucket does not answer.
	rec := serve(a, httptest.NewRequest("GET", BasePath+"/readyz", nil))
	wantProblem(t, rec, 503)
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("readyz: 503 without Retry-After")
	}
	for _, path := range []string{"/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV", "/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV/journal"} {
		rec := serve(a, httptest.NewRequest("GET", BasePath+path, nil))
		wantProblem(t, rec, 503)
		if rec.Header().Get("Retry-After") == "" {
			t.Fatalf("%s: 503 without Retry-After", path)
		}
	}
}

// TestHealthAndReady: healthz says which build runs and how many claims
// are held; readyz answers 200 when the bucket answers.
func TestHealthAndReady(t *testing.T) {
	a, _ := newTestAPI(t, nil)
	for _, path := range []string{"/healthz", "/readyz"} {
		rec := serve(a, httptest.NewRequest("GET", BasePath+path, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		var body struct {
			Build struct{ Version, Go string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Build.Version == "" || body.Build.Go == "" {
			t.Fatalf("%s: build info missing: %s", path, rec.Body)
		}
	}
}
