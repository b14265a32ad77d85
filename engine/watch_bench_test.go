package engine

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

// BenchmarkWatchLatency measures how soon a waiting status request
// (GetRunStatus with after and wait) returns once its run changes: a run
// of one step is claimed, a watcher long-polls its status, and the step
// completes 5–50 ms later (a random phase). It reports the p50/p99 from
// the start of the Complete call (a lease read and the commit) to the
// watcher's return, and the watcher's blob GETs per change — the
// request's first read of the record included.
//
//   - same: the watcher and the complete on one engine;
//   - cross: the watcher on engine B, the complete on engine A (one
//     bucket, one notify/mem bus); B's GETs are counted alone.
func BenchmarkWatchLatency(b *testing.B) {
	for _, name := range []string{"same", "cross"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			bucket := mem.New()
			bus := notifymem.New()
			watchStore, counts := counting.Wrap(bucket)
			aStore := bucket
			if name == "same" {
				aStore = watchStore
			}
			a := newTestEngine(b, aStore, Config{Bus: bus})
			w := a
			if name == "cross" {
				w = newTestEngine(b, watchStore, Config{Bus: bus})
			}
			register(b, a, "w", single("one", cairn.Step{}))
			// A complete's own GETs (counted on the same engine), measured
			// without a watcher, are taken off.
			mustStart(b, a, "one", `{}`)
			l := claimOne(b, a, "w")
			before := counts.Snapshot()
			if _, err := a.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
				b.Fatal(err)
			}
			base := counts.Snapshot().Sub(before).Get
			lat := make([]time.Duration, 0, b.N)
			var gets int64
			b.ResetTimer()
			for range b.N {
				id := mustStart(b, a, "one", `{}`)
				l := claimOne(b, a, "w")
				p, err := a.GetRunStatus(ctx, id, 0, 0)
				if err != nil {
					b.Fatal(err)
				}
				before := counts.Snapshot()
				got := make(chan time.Time, 1)
				go func() {
					q, err := w.GetRunStatus(ctx, id, p.Rev, 10*time.Second)
					if err != nil || q.Rev <= p.Rev {
						b.Error("watch:", err, q)
					}
					got <- time.Now()
				}()
				awaitWatched(b, w, id)
				spend(time.Duration(rand.IntN(45)) * time.Millisecond) // the change comes at any moment of the hold
				t0 := time.Now()
				if _, err := a.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-got).Sub(t0))
				gets += counts.Snapshot().Sub(before).Get - base
			}
			b.StopTimer()
			reportLatency(b, lat)
			b.ReportMetric(float64(gets)/float64(b.N), "gets/change")
		})
	}
}
