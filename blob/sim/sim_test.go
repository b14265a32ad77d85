package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/blob/sim"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Unthrottled, the simulated store is a correct store.
func TestConformance(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{Open: func(t *testing.T) *blob.Bucket {
		m := sim.S3.NoLatency()
		m.ReadsPerSecond, m.WritesPerSecond = 1e9, 1e9
		b, _ := sim.New(mem.New(), m, sim.NewScaledClock(time.Now(), 1), 1)
		return b
	}})
}

// load issues rate writes per simulated second for d, keys from key(i),
// evenly spaced, and returns how many were throttled in each second.
func load(t *testing.T, b *blob.Bucket, c *sim.ManualClock, rate int, d time.Duration, key func(i int) string) []int {
	t.Helper()
	ctx := context.Background()
	step := time.Second / time.Duration(rate)
	var perSecond []int
	i := 0
	for s := 0; s < int(d/time.Second); s++ {
		throttled := 0
		for j := 0; j < rate; j++ {
			_, err := b.Put(ctx, key(i), []byte("x"), blob.WriteOptions{})
			switch {
			case errors.Is(err, blob.ErrThrottled):
				throttled++
			case err != nil:
				t.Fatal(err)
			}
			i++
			c.Advance(step)
		}
		perSecond = append(perSecond, throttled)
	}
	return perSecond
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// S3: 3,500 writes per second on one prefix are served; more are answered
// 503 SlowDown.
func TestS3PartitionWriteLimit(t *testing.T) {
	c := sim.NewManualClock(t0)
	b, st := sim.New(mem.New(), sim.S3.NoLatency(), c, 1)
	key := func(i int) string { return fmt.Sprintf("runs/%08d", i) }
	if got := sum(load(t, b, c, 3500, 5*time.Second, key)); got != 0 {
		t.Fatalf("3,500 PUT/s on one prefix: %d throttled, want 0", got)
	}
	per := load(t, b, c, 5000, 5*time.Second, key)
	// Capacity 3,500/s: about 1,500 of every 5,000 are refused once the
	// one-second burst is spent.
	for _, n := range per[3:] {
		if n < 1300 || n > 1700 {
			t.Fatalf("5,000 PUT/s on one prefix: throttled per second %v, want ≈1,500", per)
		}
	}
	_, err := b.Put(context.Background(), "runs/x", nil, blob.WriteOptions{})
	for i := 0; i < 5000 && err == nil; i++ {
		_, err = b.Put(context.Background(), "runs/x", nil, blob.WriteOptions{})
	}
	if !errors.Is(err, blob.ErrThrottled) || !strings.Contains(err.Error(), "503 SlowDown") {
		t.Fatalf("over the limit: %v, want a throttled 503 SlowDown", err)
	}
	if s := st.Stats(); s.Total.ThrottledWrites == 0 || s.ByPrefix["runs"].ThrottledWrites != s.Total.ThrottledWrites {
		t.Fatalf("stats %+v", s)
	}
}

// Reads and writes have separate capacities: 5,500 GET/s and 3,500 PUT/s
// at once on one prefix are all served; 9,000 GET/s are not.
func TestS3ReadLimitSeparate(t *testing.T) {
	c := sim.NewManualClock(t0)
	b, _ := sim.New(mem.New(), sim.S3.NoLatency(), c, 1)
	ctx := context.Background()
	if _, err := b.Put(ctx, "runs/a", []byte("x"), blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	read := func(perSec int, writesPerSec int) (throttled int) {
		step := time.Second / time.Duration(perSec)
		for s := 0; s < 3; s++ {
			for j := 0; j < perSec; j++ {
				if _, err := b.Get(ctx, "runs/a"); errors.Is(err, blob.ErrThrottled) {
					throttled++
				} else if err != nil {
					t.Fatal(err)
				}
				if j*writesPerSec/perSec != (j+1)*writesPerSec/perSec {
					if _, err := b.Put(ctx, fmt.Sprintf("runs/w%d-%d", s, j), nil, blob.WriteOptions{}); err != nil {
						t.Fatalf("write beside reads: %v", err)
					}
				}
				c.Advance(step)
			}
		}
		return throttled
	}
	if n := read(5500, 3400); n != 0 {
		t.Fatalf("5,500 GET/s with 3,400 PUT/s: %d reads throttled", n)
	}
	if n := read(9000, 0); n < 4000 {
		t.Fatalf("9,000 GET/s for 3 s: %d reads throttled, want ≈5,000 (3 × 3,500 beyond capacity, less one second of burst)", n)
	}
}

// A partition kept hot splits after SplitAfter; when the traffic spreads
// over the key range (a hash before the ordered part), the split doubles
// the capacity and the throttling stops. Scaled by 100 to keep the test
// short: 35 writes/s per partition.
func TestS3SplitRelievesSpreadKeys(t *testing.T) {
	c := sim.NewManualClock(t0)
	b, st := sim.New(mem.New(), sim.S3.NoLatency().Scaled(100), c, 1)
	hex := "0123456789abcdef"
	key := func(i int) string { return fmt.Sprintf("runs/%c/%08d", hex[i%16], i) }
	per := load(t, b, c, 60, 9*time.Minute, key)
	if st.Stats().Partitions != 1 || sum(per[len(per)-60:]) == 0 {
		t.Fatalf("before SplitAfter: %d partitions, %d throttled in the last minute; want 1 and > 0", st.Stats().Partitions, sum(per[len(per)-60:]))
	}
	per = load(t, b, c, 60, 3*time.Minute, key)
	s := st.Stats()
	if s.Partitions < 2 {
		t.Fatalf("after 12 hot minutes: %d partitions, want ≥ 2", s.Partitions)
	}
	if !strings.HasPrefix(s.Splits[0].Key, "runs/") || len(s.Splits[0].Key) != len("runs/8") {
		t.Fatalf("split at %q, want on a shard boundary runs/<c>", s.Splits[0].Key)
	}
	if n := sum(per[len(per)-60:]); n != 0 {
		t.Fatalf("after the split: %d throttled in the last minute, want 0", n)
	}
}

// Time-ordered keys defeat splitting: every new key lands in the edge
// partition, which stays throttled however often it splits.
func TestS3SplitDoesNotRelieveSequentialKeys(t *testing.T) {
	c := sim.NewManualClock(t0)
	b, st := sim.New(mem.New(), sim.S3.NoLatency().Scaled(100), c, 1)
	key := func(i int) string { return fmt.Sprintf("runs/%010d", 1<<30-i) } // inverted time, like run ids
	per := load(t, b, c, 60, 35*time.Minute, key)
	if st.Stats().Partitions < 2 {
		t.Fatalf("%d partitions after 35 hot minutes, want splits", st.Stats().Partitions)
	}
	last := sum(per[len(per)-60:])
	if last < 60*20 {
		t.Fatalf("sequential keys after splits: %d of 3,600 throttled in the last minute, want ≈25/s refused", last)
	}
}

// GCS: one write per second per object; more are answered 429.
func TestGCSObjectWriteLimit(t *testing.T) {
	c := sim.NewManualClock(t0)
	b, st := sim.New(mem.New(), sim.GCS.NoLatency(), c, 1)
	ctx := context.Background()
	if _, err := b.Put(ctx, "runs/r", nil, blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Advance(500 * time.Millisecond)
	_, err := b.Put(ctx, "runs/r", nil, blob.WriteOptions{})
	if !errors.Is(err, blob.ErrThrottled) || !strings.Contains(err.Error(), "429") {
		t.Fatalf("second write within a second: %v, want 429", err)
	}
	if _, err := b.Put(ctx, "runs/other", nil, blob.WriteOptions{}); err != nil {
		t.Fatalf("another object: %v", err)
	}
	c.Advance(500 * time.Millisecond)
	if _, err := b.Put(ctx, "runs/r", nil, blob.WriteOptions{}); err != nil {
		t.Fatalf("a second later: %v", err)
	}
	if st.Stats().Total.ThrottledObject != 1 {
		t.Fatalf("stats %+v", st.Stats().Total)
	}
}

// GCS starts at 1,000 writes/s and ramps by doubling after 20 hot minutes
// when names are spread, not when they are sequential. Scaled by 100.
func TestGCSRamp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    func(i int) string
		relief bool
	}{
		{"spread", func(i int) string { return fmt.Sprintf("leases/%04x/%08d", (i*2654435761)&0xffff, i) }, true},
		{"sequential", func(i int) string { return fmt.Sprintf("timers/%013d", 1e12+i) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sim.NewManualClock(t0)
			b, st := sim.New(mem.New(), sim.GCS.NoLatency().Scaled(100), c, 1)
			per := load(t, b, c, 15, 19*time.Minute, tc.key) // 1.5× the 10/s start
			if n := sum(per[len(per)-60:]); n < 200 {
				t.Fatalf("before the ramp: %d of 900 throttled in a minute, want ≈300", n)
			}
			per = load(t, b, c, 15, 4*time.Minute, tc.key)
			n := sum(per[len(per)-60:])
			if tc.relief && (st.Stats().Partitions < 2 || n != 0) {
				t.Fatalf("after 23 min: %d partitions, %d throttled in the last minute; want ≥ 2 and 0", st.Stats().Partitions, n)
			}
			if !tc.relief && n < 200 {
				t.Fatalf("sequential after 23 min: %d throttled in the last minute, want still ≈300", n)
			}
		})
	}
}

// A partition that cools down forgets its hot spell: intermittent load
// below SplitAfter never splits.
func TestNoSplitWithoutSustainedLoad(t *testing.T) {
	c := sim.NewManualClock(t0)
	b, st := sim.New(mem.New(), sim.S3.NoLatency().Scaled(100), c, 1)
	key := func(i int) string { return fmt.Sprintf("runs/%c/%d", 'a'+i%16, i) }
	for round := 0; round < 4; round++ {
		load(t, b, c, 60, 6*time.Minute, key)
		c.Advance(3 * time.Minute)
	}
	if p := st.Stats().Partitions; p != 1 {
		t.Fatalf("%d partitions after 6-minute spells, want 1", p)
	}
}

// Latency is waited on the clock and respects cancellation.
func TestLatencyOnScaledClock(t *testing.T) {
	c := sim.NewScaledClock(t0, 100) // 100 simulated seconds per wall second
	m := sim.S3
	b, _ := sim.New(mem.New(), m, c, 1)
	start := time.Now()
	for i := 0; i < 20; i++ {
		if _, err := b.Put(context.Background(), fmt.Sprintf("k%d", i), nil, blob.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wall := time.Since(start)
	if wall > 500*time.Millisecond { // 20 × ~60 ms simulated = 12 ms wall
		t.Fatalf("20 simulated writes took %v of wall time at 100×", wall)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Get(ctx, "k0"); err == nil {
		t.Fatal("read with a cancelled context succeeded")
	}
}

// A LIST made under WithListWeight(ctx, w) is charged to the store about
// w of the time: 1,000 LISTs at once on a partition with a second of burst
// (55 reads at 1/100, the burst set back to 1 s) are nearly all refused at full weight and all served
// at 1/100, and the counted LISTs are about w of them.
func TestListWeight(t *testing.T) {
	for _, tc := range []struct {
		w                  float64
		minThr, maxThr     int
		minCount, maxCount int64
	}{
		{w: 1, minThr: 900, maxThr: 1000, minCount: 1000, maxCount: 1000},
		{w: 0.01, minThr: 0, maxThr: 0, minCount: 1, maxCount: 30},
	} {
		t.Run(fmt.Sprint(tc.w), func(t *testing.T) {
			c := sim.NewManualClock(t0)
			m := sim.S3.NoLatency().Scaled(100)
			m.Burst = 1 // 55 reads at once
			b, s := sim.New(mem.New(), m, c, 1)
			ctx := sim.WithListWeight(context.Background(), tc.w)
			thr := 0
			for range 1000 {
				_, err := b.List(ctx, blob.ListOptions{Prefix: "timers/"})
				if errors.Is(err, blob.ErrThrottled) {
					thr++
				} else if err != nil {
					t.Fatal(err)
				}
			}
			n := s.Stats().Total.Lists
			if thr < tc.minThr || thr > tc.maxThr || n < tc.minCount || n > tc.maxCount {
				t.Fatalf("weight %g: %d of 1,000 LISTs throttled, %d counted; want %d–%d throttled, %d–%d counted", tc.w, thr, n, tc.minThr, tc.maxThr, tc.minCount, tc.maxCount)
			}
		})
	}
}

// Scaled divides the capacity by f and multiplies the burst by √f: at
// 1/100 a partition takes 35 writes/s and 350 at once.
func TestScaledBurst(t *testing.T) {
	c := sim.NewManualClock(t0)
	m := sim.S3.NoLatency().Scaled(100)
	if m.WritesPerSecond != 35 || m.Burst != 10 {
		t.Fatalf("Scaled(100): %g writes/s, burst %g s; want 35 and 10", m.WritesPerSecond, m.Burst)
	}
	b, _ := sim.New(mem.New(), m, c, 1)
	refused := 0
	for i := range 400 {
		_, err := b.Put(context.Background(), fmt.Sprintf("runs/%03d", i), nil, blob.WriteOptions{})
		if errors.Is(err, blob.ErrThrottled) {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if refused != 50 {
		t.Fatalf("400 writes at once: %d refused, want 50 (350 of burst)", refused)
	}
}
