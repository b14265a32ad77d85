package engine

import (
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/internal/storetest"
)

// stores returns the stores engine tests run against: mem always, the
// file store, GCS (fake-gcs-server, a child process, through the gcs driver),
// Azure (Azurite, not under -short) and MinIO when containers are
// available (see main_test.go).
func stores(t *testing.T) map[string]func(t *testing.T) *blob.Bucket {
	m := map[string]func(t *testing.T) *blob.Bucket{
		"mem": func(t *testing.T) *blob.Bucket { return mem.New() },
		"file": func(t *testing.T) *blob.Bucket {
			b, err := file.New(t.TempDir(), file.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	m["gcs"] = func(t *testing.T) *blob.Bucket { return storetest.GCS(t) }
	m["azure"] = func(t *testing.T) *blob.Bucket { return storetest.Azure(t) }
	for k, v := range extraStores {
		m[k] = v
	}
	return m
}

var extraStores = map[string]func(t *testing.T) *blob.Bucket{}
