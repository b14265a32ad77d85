package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
)

// With a latency profile and no faults the layer is still a correct store.
func TestConformanceWithLatency(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{Open: func(t *testing.T) *blob.Bucket {
		b, _ := faults.Wrap(mem.New(), faults.S3.Scaled(0.01))
		return b
	}})
}

func TestLatency(t *testing.T) {
	b, _ := faults.Wrap(mem.New(), faults.Profile{Write: faults.Latency{P50: 30 * time.Millisecond}})
	start := time.Now()
	if _, err := b.Create(context.Background(), "k", nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("write took %v, want ≥ 30ms", d)
	}
	// Latency respects cancellation.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	b2, _ := faults.Wrap(mem.New(), faults.Profile{Read: faults.Latency{P50: time.Hour}})
	if _, err := b2.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow read with a deadline: %v", err)
	}
}

func TestPerObjectRateLimit(t *testing.T) {
	ctx := context.Background()
	b, s := faults.Wrap(mem.New(), faults.Profile{WritesPerObjectPerSecond: 1, TimeScale: 0.1}) // 1 write per 100ms
	if _, err := b.Put(ctx, "k", nil, blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Put(ctx, "k", nil, blob.WriteOptions{})
	if !errors.Is(err, blob.ErrThrottled) || !blob.IsRetryable(err) {
		t.Fatalf("second write within the window: %v, want ErrThrottled", err)
	}
	if _, err := b.Put(ctx, "other", nil, blob.WriteOptions{}); err != nil {
		t.Fatalf("a write to another object was throttled: %v", err)
	}
	time.Sleep(110 * time.Millisecond)
	if _, err := b.Put(ctx, "k", nil, blob.WriteOptions{}); err != nil {
		t.Fatalf("write after the window: %v", err)
	}
	if got := s.Stats().Throttled; got != 1 {
		t.Fatalf("throttled = %d, want 1", got)
	}
}

func TestInjectBeforeAndAfter(t *testing.T) {
	ctx := context.Background()
	b, s := faults.Wrap(mem.New(), faults.Profile{})
	boom := errors.New("boom")
	s.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "a/", Err: boom, Times: 1})
	if _, err := b.Create(ctx, "a/1", nil); !errors.Is(err, boom) {
		t.Fatalf("first create: %v, want boom", err)
	}
	if _, err := b.Stat(ctx, "a/1"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a fault before the write still wrote: %v", err)
	}
	if _, err := b.Create(ctx, "a/1", nil); err != nil {
		t.Fatalf("rule did not retire after Times: %v", err)
	}

	// After: the write lands, the caller sees an error.
	s.Inject(faults.Rule{Ops: []faults.Op{faults.OpSwap}, After: true, Skip: 1, Times: 1})
	v, _ := b.Create(ctx, "b", []byte("0"))
	v1, err := b.Swap(ctx, "b", []byte("1"), v) // skipped
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Swap(ctx, "b", []byte("2"), v1); !errors.Is(err, faults.ErrInjected) {
		t.Fatalf("second swap: %v, want ErrInjected", err)
	}
	if o, _ := b.Get(ctx, "b"); string(o.Data) != "2" {
		t.Fatalf("an after-fault did not apply the write: %q", o.Data)
	}
	if s.Stats().Injected != 2 {
		t.Fatalf("injected = %d, want 2", s.Stats().Injected)
	}
	s.Clear()
	var got *faults.Store
	if !b.As(&got) || got != s {
		t.Fatal("As(**Store) failed")
	}
}

func TestProbability(t *testing.T) {
	ctx := context.Background()
	b, s := faults.Wrap(mem.New(), faults.Profile{})
	s.Inject(faults.Rule{Ops: []faults.Op{faults.OpGet}, Probability: 0.5})
	fails := 0
	for range 1000 {
		if _, err := b.Get(ctx, "missing"); errors.Is(err, faults.ErrInjected) {
			fails++
		}
	}
	if fails < 400 || fails > 600 {
		t.Fatalf("%d of 1000 failed at probability 0.5", fails)
	}
}
