package e2e

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testinfra/testnats"
	"github.com/cairn-dev/cairn/notify"
	_ "github.com/cairn-dev/cairn/notify/mem"
	_ "github.com/cairn-dev/cairn/notify/nats"
)

// BenchmarkWakeAcrossInstances measures wake latency between two engine
// instances on one bucket: the time from StartRun on instance B (the step
// becomes ready) to a claim held on instance A returning it, over an
// in-process bus and over NATS (an embedded server on 127.0.0.1).
func BenchmarkWakeAcrossInstances(b *testing.B) {
	for _, bus := range []string{"mem", "nats"} {
		b.Run(bus, func(b *testing.B) {
			url := "mem://wake-bench"
			if bus == "nats" {
				url = testnats.URL(b)
			}
			ctx := context.Background()
			store := mem.New()
			open := func() *engine.Engine {
				bs, err := notify.Open(ctx, url)
				if err != nil {
					b.Fatal(err)
				}
				e, err := engine.New(store, engine.Config{Bus: bs})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { e.Close(); notify.Close(bs) })
				return e
			}
			a, bb := open(), open()
			wf := cairn.Workflow{Name: "wake", Version: "1", Steps: []cairn.Step{{ID: "only"}}}
			if _, err := a.Register(ctx, cairn.RegisterRequest{WorkerID: "w", Workflows: []cairn.Workflow{wf}}); err != nil {
				b.Fatal(err)
			}
			a.Claim(ctx, cairn.ClaimRequest{WorkerID: "w"}) // the first fallback scan, once
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				got := make(chan time.Time, 1)
				go func() {
					ls, err := a.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 10000})
					if err != nil || len(ls) != 1 {
						b.Error(err, len(ls))
						got <- time.Now()
						return
					}
					got <- time.Now()
					a.Complete(ctx, ls[0].ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)})
				}()
				if err := a.AwaitHeldClaims(ctx, 1); err != nil { // the claim is held
					b.Fatal(err)
				}
				t0 := time.Now()
				if _, err := bb.StartRun(ctx, cairn.StartRequest{Workflow: "wake"}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-got).Sub(t0))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
