package engine

import (
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/internal/storetest"
)

// benchStores are the stores benchmarks compare: memory, a directory (with
// fsync), and MinIO.
func benchStores() map[string]func(b *testing.B) *blob.Bucket {
	return map[string]func(b *testing.B) *blob.Bucket{
		"mem":   func(b *testing.B) *blob.Bucket { return mem.New() },
		"file":  func(b *testing.B) *blob.Bucket { return storetest.FileSync(b) },
		"minio": func(b *testing.B) *blob.Bucket { return storetest.MinIO(b) },
	}
}
