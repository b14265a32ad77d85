package bustest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/notify"
)

// BenchWake measures wake latency at the bus level: the time from Publish
// on pub to the subscriber callback on sub, one hint at a time. It reports
// p50-µs and p99-µs (and mean ns/op as usual).
func BenchWake(b *testing.B, pub, sub notify.Bus) {
	got := make(chan int, 1024)
	stop, err := sub.Subscribe(func(h notify.Hint) {
		select {
		case got <- h.Attempt:
		default:
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	hint := notify.Hint{Run: "bench-run", Workflow: "bench", Version: "1", Step: "s"}
	// Warm up: let the subscription settle.
	for i := -50; i < 0; i++ {
		hint.Attempt = i
		if err := pub.Publish(ctx, []notify.Hint{hint}); err != nil {
			b.Fatal(err)
		}
		waitAttempt(b, got, i)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		hint.Attempt = i + 1
		t0 := time.Now()
		if err := pub.Publish(ctx, []notify.Hint{hint}); err != nil {
			b.Fatal(err)
		}
		waitAttempt(b, got, i+1)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

func waitAttempt(b *testing.B, got <-chan int, want int) {
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case a := <-got:
			if a == want {
				return
			}
		case <-timeout.C:
			b.Fatalf("no delivery of attempt %d within 10s", want)
		}
	}
}
