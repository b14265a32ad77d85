package counting_test

import (
	"context"
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{Open: func(t *testing.T) *blob.Bucket {
		b, _ := counting.Wrap(mem.New())
		return b
	}})
}

func TestCounts(t *testing.T) {
	ctx := context.Background()
	b, c := counting.Wrap(mem.New())
	v, _ := b.Create(ctx, "k", []byte("1"))
	b.Create(ctx, "k", []byte("again")) // refused, still billed
	b.Swap(ctx, "k", []byte("2"), v)
	b.Put(ctx, "k", []byte("3"), blob.WriteOptions{})
	b.Get(ctx, "k")
	b.Stat(ctx, "k")
	b.List(ctx, blob.ListOptions{})
	b.Delete(ctx, "k")
	b.Get(ctx, "/invalid") // rejected before the store: not billed
	got := c.Snapshot()
	want := counting.Snapshot{Get: 1, Stat: 1, Create: 2, Swap: 1, Put: 1, Delete: 1, List: 1}
	if got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
	if got.PutClass() != 5 || got.Reads() != 2 || got.Total() != 8 {
		t.Fatalf("put-class %d reads %d total %d, want 5 2 8", got.PutClass(), got.Reads(), got.Total())
	}
	if cost := got.Cost(); cost < 25.79e-6 || cost > 25.81e-6 {
		t.Fatalf("cost = %g, want 5 PUT-class at $5/M + 2 GET at $0.40/M = 25.8e-6", cost)
	}
	var viaAs *counting.Counts
	if !b.As(&viaAs) || viaAs != c {
		t.Fatal("As(**Counts) did not return the counters")
	}
	if d := got.Sub(counting.Snapshot{Get: 1}); d.Get != 0 || d.List != 1 {
		t.Fatalf("Sub = %+v", d)
	}
	c.Reset()
	if c.Snapshot() != (counting.Snapshot{}) {
		t.Fatal("Reset left counts")
	}
}
