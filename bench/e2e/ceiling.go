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
	// The objects exist before the window opens, so a slow create (a
	// loaded machine's fsync) costs the measurement nothing, and every
	// writer swaps at least once however late its turn comes.
	keys := make([]string, o.slots)
	vers := make([]blob.Version, o.slots)
	errs := make([]error, o.slots)
	var wg sync.WaitGroup
	prefix := fmt.Sprintf("bench-ceiling/%d", time.Now().UnixNano())
	for w := range o.slots {
		wg.Go(func() {
			keys[w] = fmt.Sprintf("%s-%d", prefix, w)
			vers[w], errs[w] = b.Create(ctx, keys[w], body)
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			return "", fmt.Errorf("ceiling: writer %d: %w", w, err)
		}
	}
	lats := make([][]time.Duration, o.slots)
	t0 := time.Now()
	stop := t0.Add(o.ceilingFor)
	for w := range o.slots {
		wg.Go(func() {
			for {
				s := time.Now()
				if vers[w], errs[w] = b.Swap(ctx, keys[w], body, vers[w]); errs[w] != nil {
					return
				}
				lats[w] = append(lats[w], time.Since(s))
				if !time.Now().Before(stop) {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	var lat []time.Duration
	for w, err := range errs {
		if err != nil {
			return "", fmt.Errorf("ceiling: writer %d: %w", w, err)
		}
		lat = append(lat, lats[w]...)
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
