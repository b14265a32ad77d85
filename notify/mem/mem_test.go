package mem_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/bustest"
	"github.com/cairn-dev/cairn/notify/mem"
)

var channels atomic.Int64

func TestConformance(t *testing.T) {
	bustest.Run(t, bustest.Harness{
		Kind: bustest.FanOut,
		Channel: func(t *testing.T) func(t *testing.T) notify.Bus {
			url := fmt.Sprintf("mem://conformance-%d", channels.Add(1))
			return func(t *testing.T) notify.Bus { return bustest.OpenURL(t, url) }
		},
		Quiet: 50 * time.Millisecond,
	})
}

func TestSameNameSameBus(t *testing.T) {
	ctx := context.Background()
	a, err := notify.Open(ctx, "mem://shared-name")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := notify.Open(ctx, "mem:///shared-name")
	c, _ := notify.Open(ctx, "mem://other-name")
	if a != b {
		t.Error("mem://shared-name and mem:///shared-name are different buses")
	}
	if a == c {
		t.Error("different names gave the same bus")
	}
	if mem.Get("shared-name") != a {
		t.Error("Get and Open disagree")
	}
	if _, err := notify.Open(ctx, "mem://x?bogus=1"); err == nil {
		t.Error("unknown query parameter accepted")
	}
}

func TestSlowSubscriberDropsBeyondBound(t *testing.T) {
	b := mem.New()
	release := make(chan struct{})
	var n atomic.Int64
	stop, _ := b.Subscribe(func(notify.Hint) {
		<-release
		n.Add(1)
	})
	defer stop()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // runs before stop, so a failed test cannot hang in it
	// The subscriber takes at most MaxPending hints before its first
	// callback blocks, and queues at most MaxPending more: publishing
	// three times MaxPending must drop some, however the goroutines run.
	const batches = 3 * mem.MaxPending / 1000
	batch := make([]notify.Hint, 1000)
	for range batches {
		if err := b.Publish(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	if b.Dropped() == 0 {
		t.Fatal("no hint dropped for a stuck subscriber")
	}
	unblock()
	bustest.WaitFor(t, 5*time.Second, "deliveries", func() bool { return n.Load()+b.Dropped() >= int64(1000*batches) })
}

func TestPublishCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := mem.New().Publish(ctx, bustest.Hints("x", 1)); err == nil {
		t.Fatal("Publish with a canceled context succeeded")
	}
}

func BenchmarkWake(b *testing.B) {
	bus := mem.New()
	bustest.BenchWake(b, bus, bus)
}
