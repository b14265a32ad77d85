package blobtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairn-dev/cairn/blob"
)

// BenchmarkSwapContended measures compare-and-swap throughput on one
// object with Contenders goroutines incrementing it. It reports
// successful swaps per second and attempts (reads+swaps) per success: the
// cost of contention on a single object.
func BenchmarkSwapContended(b *testing.B, bucket *blob.Bucket) {
	c := context.Background()
	k := fmt.Sprintf("blobtest/bench/%d", b.N)
	if _, err := bucket.Put(c, k, []byte("0"), blob.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	var next, attempts atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range Contenders {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				for {
					attempts.Add(1)
					o, err := bucket.Get(c, k)
					if err != nil {
						b.Error(err)
						return
					}
					_, err = bucket.Swap(c, k, append(o.Data[:0:0], o.Data...), o.Version)
					if err == nil {
						break
					}
					if !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "swaps/s")
	b.ReportMetric(float64(attempts.Load())/float64(b.N), "attempts/swap")
}

// BenchmarkCreateDistinct measures create-only writes of distinct keys
// from Contenders goroutines: the shape of claiming many attempts.
func BenchmarkCreateDistinct(b *testing.B, bucket *blob.Bucket) {
	c := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	prefix := fmt.Sprintf("blobtest/bench-create/%d/", b.N)
	b.ResetTimer()
	for range Contenders {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := bucket.Create(c, fmt.Sprintf("%s%d", prefix, i), []byte("x")); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}
