package kv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/kv"
	"github.com/cairn-dev/cairn/internal/storetest"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

func TestMain(m *testing.M) { testinfra.Main(m) }

// eachStore runs test on every store whose conditional writes the long-term
// store relies on: mem, a directory, MinIO and GCS (fake-gcs-server).
func eachStore(t *testing.T, test func(t *testing.T, s *kv.Store)) {
	for name, open := range map[string]func(testing.TB) *blob.Bucket{
		"mem": func(testing.TB) *blob.Bucket { return mem.New() }, "file": storetest.File,
		"minio": storetest.MinIO, "gcs": storetest.GCS,
	} {
		t.Run(name, func(t *testing.T) { test(t, kv.New(open(t), "p/", kv.MaxValue, time.Now)) })
	}
}

func put(t *testing.T, s *kv.Store, key, value string, req cairn.StorePutRequest) (*cairn.StoreEntry, error) {
	t.Helper()
	req.Value = json.RawMessage(value)
	return s.Put(context.Background(), "ns", key, req)
}

func isConflict(err error) bool {
	var c *errs.ConflictError
	return errors.As(err, &c)
}

func isNotFound(err error) bool {
	var n *errs.NotFoundError
	return errors.As(err, &n)
}

// TestStoreConditionalWrites: if_version writes over that version only,
// if_absent only where there is no value (a deleted key included), and a
// delete with if_version deletes that version only.
func TestStoreConditionalWrites(t *testing.T) {
	eachStore(t, func(t *testing.T, s *kv.Store) {
		ctx := context.Background()
		if _, err := s.Get(ctx, "ns", "k"); !isNotFound(err) {
			t.Fatalf("get of a key never written: %v, want not found", err)
		}
		first, err := put(t, s, "k", `{ "n": 1 }`, cairn.StorePutRequest{IfAbsent: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := put(t, s, "k", `{"n":9}`, cairn.StorePutRequest{IfAbsent: true}); !isConflict(err) {
			t.Fatalf("if_absent over a value: %v, want a conflict", err)
		}
		second, err := put(t, s, "k", `{"n":2}`, cairn.StorePutRequest{IfVersion: first.Version})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := put(t, s, "k", `{"n":9}`, cairn.StorePutRequest{IfVersion: first.Version}); !isConflict(err) {
			t.Fatalf("if_version of a replaced value: %v, want a conflict", err)
		}
		got, err := s.Get(ctx, "ns", "k")
		if err != nil || string(got.Value) != `{"n":2}` || got.Version != second.Version {
			t.Fatalf("get = %+v %v, want the second write (compacted) at its version %s", got, err, second.Version)
		}
		if err := s.Delete(ctx, "ns", "k", first.Version); !isConflict(err) {
			t.Fatalf("delete of an old version: %v, want a conflict", err)
		}
		if err := s.Delete(ctx, "ns", "k", second.Version); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "ns", "k"); !isNotFound(err) {
			t.Fatalf("get after a conditional delete: %v, want not found", err)
		}
		if page, err := s.List(ctx, "ns", "", "", 0); err != nil || len(page.Keys) != 0 {
			t.Fatalf("listing after the delete: %+v %v, want no key", page, err)
		}
		if _, err := put(t, s, "k", `3`, cairn.StorePutRequest{IfAbsent: true}); err != nil {
			t.Fatalf("if_absent over a deleted key: %v", err)
		}
		if err := s.Delete(ctx, "ns", "k", ""); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "ns", "k", ""); err != nil {
			t.Fatalf("deleting a key with no value: %v", err)
		}
	})
}

// TestStoreConcurrentIncrements: writers that read, add one and write with
// if_version lose no increment, however they interleave.
func TestStoreConcurrentIncrements(t *testing.T) {
	eachStore(t, func(t *testing.T, s *kv.Store) {
		ctx := context.Background()
		if _, err := put(t, s, "counter", `0`, cairn.StorePutRequest{}); err != nil {
			t.Fatal(err)
		}
		const writers, each = 4, 5
		var wg sync.WaitGroup
		errc := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				for i := 0; i < each; {
					e, err := s.Get(ctx, "ns", "counter")
					if err != nil {
						errc <- err
						return
					}
					var n int
					_ = json.Unmarshal(e.Value, &n)
					_, err = s.Put(ctx, "ns", "counter", cairn.StorePutRequest{Value: json.RawMessage(fmt.Sprint(n + 1)), IfVersion: e.Version})
					switch {
					case err == nil:
						i++
					case !isConflict(err) && !errors.Is(err, blob.ErrConflict):
						errc <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		e, err := s.Get(ctx, "ns", "counter")
		if err != nil || string(e.Value) != fmt.Sprint(writers*each) {
			t.Fatalf("counter = %s %v, want %d", e.Value, err, writers*each)
		}
	})
}

// TestStoreListing pages a namespace by prefix, and keeps namespaces apart.
func TestStoreListing(t *testing.T) {
	eachStore(t, func(t *testing.T, s *kv.Store) {
		ctx := context.Background()
		for i := range 5 {
			if _, err := put(t, s, fmt.Sprintf("user:%d", i), `true`, cairn.StorePutRequest{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := put(t, s, "other", `1`, cairn.StorePutRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "ns2", "user:9", cairn.StorePutRequest{Value: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		var keys []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, err := s.List(ctx, "ns", "user:", cursor, 2)
			if err != nil || pages > 5 {
				t.Fatalf("page %d: %v (or too many pages)", pages, err)
			}
			for _, k := range page.Keys {
				if k.Size != 4 || k.Version == "" {
					t.Fatalf("listed %+v, want size 4 and a version", k)
				}
				keys = append(keys, k.Key)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(keys) != "[user:0 user:1 user:2 user:3 user:4]" {
			t.Fatalf("listed %v", keys)
		}
	})
}

// TestStoreRefusesBadInput: names, values, versions and cursors a caller
// sends are checked before they reach the bucket, each error naming its
// field.
func TestStoreRefusesBadInput(t *testing.T) {
	s := kv.New(mem.New(), "", 16, time.Now)
	ctx := context.Background()
	for _, c := range []struct {
		field string
		err   error
	}{
		{"namespace", func() error { _, err := s.Get(ctx, "../x", "k"); return err }()},
		{"key", func() error { _, err := s.Get(ctx, "ns", "a/b"); return err }()},
		{"key", func() error { _, err := s.Get(ctx, "ns", ""); return err }()},
		{"value", func() error { _, err := s.Put(ctx, "ns", "k", cairn.StorePutRequest{}); return err }()},
		{"value", func() error {
			_, err := s.Put(ctx, "ns", "k", cairn.StorePutRequest{Value: json.RawMessage(`{"a":`)})
			return err
		}()},
		{"value", func() error {
			_, err := s.Put(ctx, "ns", "k", cairn.StorePutRequest{Value: json.RawMessage(`"0123456789abcdef"`)})
			return err
		}()},
		{"if_absent", func() error {
			_, err := s.Put(ctx, "ns", "k", cairn.StorePutRequest{Value: json.RawMessage(`1`), IfAbsent: true, IfVersion: "AA"})
			return err
		}()},
		{"if_version", func() error { return s.Delete(ctx, "ns", "k", "!") }()},
		{"prefix", func() error { _, err := s.List(ctx, "ns", "a/", "", 0); return err }()},
		{"cursor", func() error { _, err := s.List(ctx, "ns", "", "%%", 0); return err }()},
	} {
		var v cairn.ValidationError
		if !errors.As(c.err, &v) || v[0].Field != c.field {
			t.Errorf("%v, want a validation error naming %s", c.err, c.field)
		}
	}
}
