package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/blob/mem"
)

// BenchmarkMap runs one map step over 1,000 and 10,000 items (max
// concurrency 100, 32 in-process workers claiming 8 at a time) on the
// file store and on a store with GCS's shape (faults.GCS scaled by 0.2:
// 16–140 ms writes, 5 writes/s per object), and reports the blob
// requests per item by class, the run record's writes per item and the
// wall time:
//
//	go test ./engine -run '^$' -bench BenchmarkMap -benchtime 1x
func BenchmarkMap(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) *blob.Bucket
	}{
		{"file", func(b *testing.B) *blob.Bucket {
			s, err := file.New(b.TempDir(), file.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"gcs", func(b *testing.B) *blob.Bucket { s, _ := faults.Wrap(mem.New(), faults.GCS.Scaled(0.2)); return s }},
	}
	for _, st := range stores {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/items=%d", st.name, n), func(b *testing.B) {
				for range b.N {
					benchMapOnce(b, st.open(b), n)
				}
			})
		}
	}
}

func benchMapOnce(b *testing.B, store *blob.Bucket, n int) {
	ctx := context.Background()
	counted, counts := counting.Wrap(store)
	e := newTestEngine(b, counted, Config{})
	register(b, e, "w", cairn.Workflow{Name: "bmap", Version: "1", Steps: []cairn.Step{
		{ID: "each", Kind: cairn.KindMap, Items: "input.xs", MaxConcurrency: 100},
	}})
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	input := string(mustJSON(map[string]any{"xs": xs}))
	counts.Reset()
	began := time.Now()
	run := mustStart(b, e, "bmap", input)
	var wg sync.WaitGroup
	var done sync.Once
	finished := make(chan struct{})
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-finished:
					return
				default:
				}
				ls, err := e.Claim(ctx, ClaimRequest{WorkerID: "w", Max: 8, WaitMs: 100})
				if err != nil {
					b.Error(err)
					return
				}
				if len(ls) == 0 {
					if r, err := e.readRun(ctx, run); err == nil && r.Status.Terminal() {
						done.Do(func() { close(finished) })
					}
					continue
				}
				for _, l := range ls {
					for try := 0; ; try++ {
						_, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(fmt.Sprint(*l.Item * 2))})
						if _, rej := IsRejection(err); err == nil || rej || try > 20 {
							break
						}
						spend(20 * time.Millisecond) // the backoff
					}
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	r, err := e.readRun(ctx, run)
	if err != nil || r.Status != cairn.RunCompleted {
		b.Fatalf("run %v %v", r.Status, err)
	}
	c := counts.Snapshot()
	per := func(v int64) float64 { return float64(v) / float64(n) }
	b.ReportMetric(took.Seconds(), "s/map")
	b.ReportMetric(per(c.Get+c.Stat), "GET/item")
	b.ReportMetric(per(c.Create), "create/item")
	b.ReportMetric(per(c.Swap), "CAS/item")
	b.ReportMetric(per(c.Put), "PUT/item")
	b.ReportMetric(per(c.List), "LIST/item")
	b.ReportMetric(per(c.Total()), "req/item")
	b.ReportMetric(float64(n)/float64(r.Rev), "items/record-write")
	b.ReportMetric(float64(len(mustJSON(r))), "record-bytes")
}
