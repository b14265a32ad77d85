package catalog

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// gatedGets counts the reads of one key and holds each until released.
type gatedGets struct {
	blob.Driver
	key     string
	reads   atomic.Int64
	release chan struct{}
}

func (g *gatedGets) Get(ctx context.Context, key string) (*blob.Object, error) {
	if key == g.key {
		g.reads.Add(1)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Driver.Get(ctx, key)
}

func latestCatalog(t *testing.T) (*Catalog[struct{}], *gatedGets) {
	t.Helper()
	k := keys.Layout{}
	store := mem.New()
	if _, err := store.Put(context.Background(), k.WorkflowLatest("wf"), []byte(`{"latest":"2","versions":[]}`), blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	g := &gatedGets{Driver: store.Driver(), key: k.WorkflowLatest("wf"), release: make(chan struct{})}
	return New(Host[struct{}]{Store: blob.NewBucket(g), Keys: k, Now: time.Now, LatestTTL: time.Hour, Log: slog.New(slog.DiscardHandler)}), g
}

// await polls cond for up to 10 s (the reads it waits for are held in
// the test's own driver, so nothing else can make it true).
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
	}
}

// TestConcurrentLatestReadsShareOneRead: a burst of starts that all miss
// the cached newest version read the latest record once, and one whose
// caller goes away does not fail the others. Each used to read it: a
// burst of 200 starts read it 24 times on MinIO.
func TestConcurrentLatestReadsShareOneRead(t *testing.T) {
	c, g := latestCatalog(t)
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.Latest(leaderCtx, "wf")
		leaderErr <- err
	}()
	await(t, "the first Latest did not read the latest record", func() bool { return g.reads.Load() == 1 })
	const n = 50
	var wg sync.WaitGroup
	got := make([]string, n)
	errv := make([]error, n)
	for i := range n {
		wg.Go(func() { got[i], errv[i] = c.Latest(context.Background(), "wf") })
	}
	// Let the burst queue behind the read in flight: without sharing,
	// each of them reads on its own.
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if r := g.reads.Load(); r > 1 {
			t.Fatalf("%d reads of the latest record for concurrent Latest calls, want 1", r)
		}
	}
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled caller got %v, want context.Canceled", err)
	}
	close(g.release)
	wg.Wait()
	for i := range n {
		if errv[i] != nil || got[i] != "2" {
			t.Fatalf("Latest %d: %q, %v; want 2 (the first caller going away must not fail the others)", i, got[i], errv[i])
		}
	}
	if r := g.reads.Load(); r != 1 {
		t.Fatalf("%d reads, want 1", r)
	}
	if v, err := c.Latest(context.Background(), "wf"); err != nil || v != "2" || g.reads.Load() != 1 {
		t.Fatalf("cached: %q, %v, %d reads", v, err, g.reads.Load())
	}
}

// TestLatestAfterForgetReadsAgain: a registration heard of while a read
// is in flight starts a read of its own; the older read does not answer
// the callers that came after it.
func TestLatestAfterForgetReadsAgain(t *testing.T) {
	c, g := latestCatalog(t)
	first := make(chan error, 1)
	go func() {
		_, err := c.Latest(context.Background(), "wf")
		first <- err
	}()
	await(t, "the first Latest did not read", func() bool { return g.reads.Load() == 1 })
	c.Forget("wf")
	second := make(chan error, 1)
	go func() {
		_, err := c.Latest(context.Background(), "wf")
		second <- err
	}()
	await(t, "a Latest after Forget did not read again", func() bool { return g.reads.Load() == 2 })
	close(g.release)
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}
