package sdk

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/storetest"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// BenchmarkWorkerSteps measures one worker at concurrency 8 against a
// server on the file store (with fsync, as `cairn dev` runs it) and on
// MinIO, with the
// engine's default timings and a reaper every second: steps per second,
// and blob operations per step (every request the store received — runs
// started, claims, leases, heartbeats, completions, reaper passes —
// divided by the steps run). b.N counts steps.
func BenchmarkWorkerSteps(b *testing.B) {
	var bodies atomic.Int64
	noop := Handle(func(StepContext, struct{}) (struct{}, error) {
		bodies.Add(1)
		return struct{}{}, nil
	})
	shapes := []struct {
		name  string
		steps int
		def   func() *WorkflowDef
	}{
		{"fanout16", 16, func() *WorkflowDef {
			d := Workflow("fanout16", "1")
			for i := range 16 {
				d.Task(fmt.Sprintf("s%02d", i), noop)
			}
			return d
		}},
		{"linear8", 8, func() *WorkflowDef {
			d := Workflow("linear8", "1")
			for i := range 8 {
				var opts []StepOption
				if i > 0 {
					opts = append(opts, After(fmt.Sprintf("s%02d", i-1)))
				}
				d.Task(fmt.Sprintf("s%02d", i), noop, opts...)
			}
			return d
		}},
	}
	stores := []struct {
		name string
		open func(b *testing.B) *blob.Bucket
	}{
		{"file", func(b *testing.B) *blob.Bucket { return storetest.FileSync(b) }},
		{"minio", func(b *testing.B) *blob.Bucket { return storetest.MinIO(b) }},
	}
	for _, st := range stores {
		for _, sh := range shapes {
			b.Run(st.name+"/"+sh.name, func(b *testing.B) {
				bucket, counts := counting.Wrap(st.open(b))
				srv := sdktest.Start(b, sdktest.Options{
					Store: bucket,
					Engine: engine.Config{LeaseTTL: 30 * time.Second, HeartbeatInterval: 10 * time.Second,
						FallbackInterval: 10 * time.Second, AnnounceAfter: 5 * time.Second},
					ReapEvery: time.Second,
				})
				c, err := NewClient(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(c.CloseIdleConnections)
				w := NewWorker(c, WithConcurrency(8), WithLogger(quiet())).Register(sh.def())
				serve(b, w)
				ctx := context.Background()
				runs := (b.N + sh.steps - 1) / sh.steps
				bodies.Store(0)
				counts.Reset()
				b.ResetTimer()
				t0 := time.Now()
				ids := make([]string, runs)
				for i := range runs {
					r, err := c.Start(ctx, sh.name, StartOptions{})
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = r.ID
				}
				// Done when every body ran and every outcome was reported:
				// watched in process, so that waiting adds no store traffic
				// (reading a run through the API is audited: a write).
				total := int64(runs * sh.steps)
				testutil.EventuallyEvery(b, 5*time.Minute, time.Millisecond, "every body run and reported", func() (bool, string) {
					n, f := bodies.Load(), w.InFlight()
					return n >= total && f == 0, fmt.Sprintf("%d of %d bodies ran, %d in flight", n, total, f)
				})
				elapsed := time.Since(t0)
				b.StopTimer()
				ops := counts.Snapshot()
				for _, id := range ids {
					r, err := c.Get(ctx, id)
					if err != nil || r.Status != RunCompleted {
						b.Fatalf("run %s: %v %v", id, r, err)
					}
				}
				steps := float64(total)
				b.ReportMetric(steps/elapsed.Seconds(), "steps/s")
				b.ReportMetric(float64(ops.Total())/steps, "blobops/step")
				b.ReportMetric(float64(ops.Reads())/steps, "reads/step")
				b.ReportMetric(float64(ops.Writes())/steps, "writes/step")
				b.ReportMetric(float64(ops.List)/steps, "lists/step")
				b.Logf("%d runs, %.0f steps in %v: %s", runs, steps, elapsed.Round(time.Millisecond), ops)
			})
		}
	}
}
