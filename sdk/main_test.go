package sdk

import (
	"testing"

	"github.com/cairn-dev/cairn/internal/testinfra"
)

// TestMain stops the MinIO container the benchmarks start.
func TestMain(m *testing.M) { testinfra.Main(m) }
