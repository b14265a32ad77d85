package mem_test

import (
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/blob/mem"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{Open: func(t *testing.T) *blob.Bucket { return mem.New() }})
}

func BenchmarkSwapContended(b *testing.B)  { blobtest.BenchmarkSwapContended(b, mem.New()) }
func BenchmarkCreateDistinct(b *testing.B) { blobtest.BenchmarkCreateDistinct(b, mem.New()) }
