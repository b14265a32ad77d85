package faultsurl_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults/faultsurl"
	_ "github.com/cairn-dev/cairn/blob/mem"
)

func open(t *testing.T, q url.Values) *blob.Bucket {
	t.Helper()
	q.Set("store", "mem://")
	b, err := blob.OpenBucket(context.Background(), "faults://?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestFaultsURL: each rate injects its fault; lost applies the write and
// reports failure; stats counts them; bad parameters are refused.
func TestFaultsURL(t *testing.T) {
	ctx := context.Background()
	b := open(t, url.Values{"error": {"1"}})
	if _, err := b.Get(ctx, "k"); !errors.Is(err, faultsurl.ErrInjected5xx) {
		t.Fatalf("error=1: got %v", err)
	}
	b = open(t, url.Values{"conflict": {"1"}})
	if _, err := b.Put(ctx, "k", []byte("{}"), blob.WriteOptions{IfNotExist: true}); !errors.Is(err, blob.ErrConflict) {
		t.Fatalf("conflict=1: got %v", err)
	}
	b = open(t, url.Values{"throttle": {"1"}})
	if _, err := b.Put(ctx, "k", []byte("{}"), blob.WriteOptions{}); !errors.Is(err, blob.ErrThrottled) {
		t.Fatalf("throttle=1: got %v", err)
	}
	stats := filepath.Join(t.TempDir(), "stats")
	b = open(t, url.Values{"lost": {"1"}, "stats": {stats}})
	if _, err := b.Put(ctx, "k", []byte("{}"), blob.WriteOptions{}); !errors.Is(err, faultsurl.ErrInjectedLost) {
		t.Fatalf("lost=1: got %v", err)
	}
	if o, err := b.Get(ctx, "k"); err != nil || string(o.Data) != "{}" {
		t.Fatalf("the lost write was not applied: %v", err)
	}
	b.Close()
	files, _ := filepath.Glob(stats + ".*")
	if len(files) != 1 {
		t.Fatalf("stats files %v", files)
	}
	if data, _ := os.ReadFile(files[0]); string(data) != `{"error":0,"conflict":0,"throttle":0,"lost":1}` {
		t.Fatalf("stats %s", data)
	}
	for _, bad := range []string{"faults://", "faults://?store=mem://&error=2", "faults://?store=mem://&latency=x", "faults://?store=mem://&seed=-1"} {
		if _, err := blob.OpenBucket(ctx, bad); err == nil {
			t.Errorf("%s opened", bad)
		}
	}
}
