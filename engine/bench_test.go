package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
)

// reaperOpsWithIdleRuns starts n runs that wait an hour for an event (each
// has a timer an hour out) and counts one reaper pass.
func reaperOpsWithIdleRuns(t testing.TB, n int) counting.Snapshot {
	ctx := context.Background()
	store, counts := counting.Wrap(mem.New())
	e := newTestEngine(t, store, Config{})
	register(t, e, "w", single("idle", cairn.Step{Kind: cairn.KindWait, Event: "go", WaitTimeout: cairn.Duration(time.Hour)}))
	for range n {
		mustStart(t, e, "idle", `{}`)
	}
	counts.Reset()
	if _, err := e.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	return counts.Snapshot()
}

// BenchmarkReaperIdleRuns reports the blob operations of one reaper pass
// with 0, 1k and 10k idle runs.
func BenchmarkReaperIdleRuns(b *testing.B) {
	for _, n := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var ops counting.Snapshot
			for range b.N {
				ops = reaperOpsWithIdleRuns(b, n)
			}
			b.ReportMetric(float64(ops.List), "lists/pass")
			b.ReportMetric(float64(ops.Reads()), "reads/pass")
			b.ReportMetric(float64(ops.Writes()), "writes/pass")
		})
	}
}

// BenchmarkIdleClaim measures what an idle worker's open claim costs: it
// holds claims for a few fallback intervals on an empty system and reports
// blob requests per idle worker-hour at the default 10 s fallback rate.
func BenchmarkIdleClaim(b *testing.B) {
	ctx := context.Background()
	store, counts := counting.Wrap(mem.New())
	const fallback = 200 * time.Millisecond
	e := newTestEngine(b, store, Config{FallbackInterval: fallback})
	register(b, e, "w", single("x", cairn.Step{}))
	counts.Reset()
	start := time.Now()
	for range b.N {
		if _, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 1000}); err != nil {
			b.Fatal(err)
		}
	}
	held := time.Since(start)
	s := counts.Snapshot()
	checks := float64(held) / float64(fallback)
	perCheck := float64(s.Total()) / checks
	b.ReportMetric(perCheck, "requests/fallback-check")
	b.ReportMetric(perCheck*3600/10, "requests/idle-worker-hour@10s")
	b.ReportMetric(float64(s.Total())/held.Seconds()*3600/(float64(time.Second*10)/float64(fallback)), "requests/hour-measured")
}

// BenchmarkWakeLatency measures the time from a step becoming ready (the
// run starts) to a waiting claim returning it, in-process.
func BenchmarkWakeLatency(b *testing.B) {
	ctx := context.Background()
	e := newTestEngine(b, mem.New(), Config{})
	register(b, e, "w", single("x", cairn.Step{}))
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		got := make(chan time.Time, 1)
		go func() {
			ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 5000})
			if err != nil || len(ls) != 1 {
				b.Error(err, len(ls))
			}
			got <- time.Now()
			e.Complete(ctx, ls[0].ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)})
		}()
		if err := e.AwaitHeldClaims(ctx, 1); err != nil { // the claim is held
			b.Fatal(err)
		}
		t0 := time.Now()
		mustStart(b, e, "x", `{}`)
		lat = append(lat, (<-got).Sub(t0))
	}
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
}

// BenchmarkStepLatency measures claim (with work ready), started and
// complete latencies of a linear workflow, per store, and blob requests
// per step.
func BenchmarkStepLatency(b *testing.B) {
	for name, open := range benchStores() {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			store, counts := counting.Wrap(open(b))
			e := newTestEngine(b, store, Config{})
			register(b, e, "w", linear("lin", "1", 10))
			var claimLat, startLat, completeLat []time.Duration
			counts.Reset()
			steps := 0
			for steps < b.N {
				mustStart(b, e, "lin", `{"n":1}`)
				for range 10 {
					t0 := time.Now()
					ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 5000})
					if err != nil || len(ls) != 1 {
						b.Fatal(err, len(ls))
					}
					t1 := time.Now()
					if _, err := e.Started(ctx, ls[0].ID); err != nil {
						b.Fatal(err)
					}
					t2 := time.Now()
					if _, err := e.Complete(ctx, ls[0].ID, cairn.CompleteRequest{Output: json.RawMessage(`"o"`)}); err != nil {
						b.Fatal(err)
					}
					t3 := time.Now()
					claimLat, startLat, completeLat = append(claimLat, t1.Sub(t0)), append(startLat, t2.Sub(t1)), append(completeLat, t3.Sub(t2))
					steps++
				}
			}
			s := counts.Snapshot()
			b.ReportMetric(float64(s.Reads())/float64(steps), "gets/step")
			b.ReportMetric(float64(s.PutClass())/float64(steps), "puts/step")
			b.ReportMetric(float64(s.List)/float64(steps), "lists/step")
			for _, x := range []struct {
				name string
				lat  []time.Duration
			}{{"claim", claimLat}, {"started", startLat}, {"complete", completeLat}} {
				sort.Slice(x.lat, func(i, j int) bool { return x.lat[i] < x.lat[j] })
				b.ReportMetric(float64(x.lat[len(x.lat)/2].Microseconds())/1000, x.name+"-p50-ms")
				b.ReportMetric(float64(x.lat[len(x.lat)*99/100].Microseconds())/1000, x.name+"-p99-ms")
			}
		})
	}
}
