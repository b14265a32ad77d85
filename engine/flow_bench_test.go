package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
)

// BenchmarkFlowControl measures one-step runs drained by 16 claimers on
// one instance (mem store behind a request counter): steps per second and
// blob requests per step, by class, with no flow control, a concurrency
// key at limit 1, 10 and 1000 (never full: the bare cost of a slot), a
// rate limit that does not bind, and priorities. Each op is one step.
//
//	go test -run '^$' -bench BenchmarkFlowControl -benchtime 400x ./engine/
func BenchmarkFlowControl(b *testing.B) {
	fast := 7
	cases := []struct {
		name string
		step cairn.Step
		prio bool
	}{
		{name: "none", step: cairn.Step{}},
		{name: "concurrency-1", step: cairn.Step{Concurrency: &cairn.ConcurrencyLimit{Key: "${input.k}", Limit: 1}}},
		{name: "concurrency-10", step: cairn.Step{Concurrency: &cairn.ConcurrencyLimit{Key: "${input.k}", Limit: 10}}},
		{name: "concurrency-unlimited", step: cairn.Step{Concurrency: &cairn.ConcurrencyLimit{Key: "${input.k}", Limit: 1000}}},
		{name: "rate-limit", step: cairn.Step{RateLimit: &cairn.RateLimit{Key: "${input.k}", Limit: 1000, Period: cairn.Duration(time.Second), Burst: 1000}}},
		{name: "priority", step: cairn.Step{Priority: &fast}, prio: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			store, counts := counting.Wrap(mem.New())
			e := newTestEngine(b, store, Config{Logger: slog.New(slog.DiscardHandler)})
			register(b, e, "w", single("f", c.step))
			for i := range b.N {
				prio := 0
				if c.prio {
					prio = i % 5
				}
				if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "f", Input: []byte(`{"k": "key"}`), Priority: prio}); err != nil {
					b.Fatal(err)
				}
			}
			counts.Reset()
			var done atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			b.ResetTimer()
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for done.Load() < int64(b.N) {
						ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1, WaitMs: 100})
						if err != nil {
							b.Error(err)
							return
						}
						for _, l := range ls {
							if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
								b.Error(err)
							}
							done.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			el := time.Since(start)
			s := counts.Snapshot()
			n := float64(b.N)
			b.ReportMetric(n/el.Seconds(), "steps/s")
			b.ReportMetric(float64(s.Reads())/n, "reads/step")
			b.ReportMetric(float64(s.Writes())/n, "writes/step")
			b.ReportMetric(float64(s.List+s.Delete)/n, "lists+deletes/step")
			b.ReportMetric(float64(s.Total())/n, "requests/step")
			_ = fmt.Sprint()
		})
	}
}
