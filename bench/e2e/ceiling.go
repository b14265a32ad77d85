package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
	_ "github.com/cairn-dev/cairn/blob/file"
	_ "github.com/cairn-dev/cairn/blob/s3"
)

// ceilingRecord is the size of the objects the ceiling workload swaps:
// about a run record of the linear workload's (MinIO's rate barely moves
// between 300 B and 10 KB).
const ceilingRecord = 4096

// ceiling measures the bound the store itself puts on the linear
// workload: --slots writers (the worker's concurrency), each swapping an
// object of its own in turn (If-Match, as a step's commit swaps its run's
// record), from this process while the server and the worker are idle.
// Every linear step costs at least one conditional write and a run its
// create, so no build of cairn on this store and machine can run more
// linear steps a second than swaps/s ÷ (PUT-class requests a step); when
// the linear workload ran before it on the same target, the line gives
// that bound at the PUT-class count linear measured and the share of it
// linear reached.
func ceiling(ctx context.Context, t target, o options, lin *result) (string, error) {
	if t.store == "" {
		return fmt.Sprintf("# %s ceiling: not measured: the store lives in the server's process", t.name), nil
	}
	for _, kv := range t.env { // the store's credentials
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "AWS_") {
			os.Setenv(k, v)
		}
	}
	b, err := blob.OpenBucket(ctx, t.store)
	if err != nil {
		return "", err
	}
	defer b.Close()
	body := make([]byte, ceilingRecord)
	var (
		mu    sync.Mutex
		lat   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	t0 := time.Now()
	stop := t0.Add(o.ceilingFor)
	for w := range o.slots {
		wg.Go(func() {
			key := fmt.Sprintf("bench-ceiling/%d-%d", t0.UnixNano(), w)
			v, err := b.Create(ctx, key, body)
			var mine []time.Duration
			for err == nil && time.Now().Before(stop) {
				s := time.Now()
				if v, err = b.Swap(ctx, key, body, v); err == nil {
					mine = append(mine, time.Since(s))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, mine...)
			if err != nil && first == nil {
				first = fmt.Errorf("ceiling: writer %d: %w", w, err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if first != nil {
		return "", first
	}
	rate := float64(len(lat)) / elapsed.Seconds()
	line := fmt.Sprintf("%-14s %-7s writers=%-3d bytes=%d secs=%-7.3f swaps/s=%-7.0f swap_p50_ms=%.2f swap_p99_ms=%.2f",
		t.name, "ceiling", o.slots, ceilingRecord, elapsed.Seconds(), rate, pct(lat, 50), pct(lat, 99))
	if lin != nil && lin.ops.Writes() > 0 {
		perStep := float64(lin.ops.Writes()) / float64(lin.steps)
		bound := rate / perStep
		got := float64(lin.steps) / lin.elapsed.Seconds()
		line += fmt.Sprintf(" linear_put/step=%.2f linear_bound_steps/s=%.0f linear_steps/s=%.0f linear_share=%.2f",
			perStep, bound, got, got/bound)
	}
	return line, nil
}
