package engine

import (
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/internal/storetest"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

func TestMain(m *testing.M) {
	// Engine tests run against MinIO too, except in -short mode.
	extraStores["minio"] = func(t *testing.T) *blob.Bucket { return storetest.MinIO(t) }
	testinfra.Main(m)
}
