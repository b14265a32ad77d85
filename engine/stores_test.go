package engine

import (
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/blob/mem"
)

// stores returns the stores engine tests run against: mem always, the
// file store, and MinIO when containers are available (see
// main_test.go).
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
	for k, v := range extraStores {
		m[k] = v
	}
	return m
}

var extraStores = map[string]func(t *testing.T) *blob.Bucket{}
