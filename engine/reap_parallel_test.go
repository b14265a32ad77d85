package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
)

// gatedRuns holds every read of a run record until two are in flight at
// once (or a few seconds passed), and records the most in flight: a pass
// that visits runs one at a time never gets past one.
type gatedRuns struct {
	blob.Driver
	mu       sync.Mutex
	on       bool
	inflight int
	max      int
	overlap  chan struct{}
	closed   bool
}

func (g *gatedRuns) Get(ctx context.Context, key string) (*blob.Object, error) {
	g.mu.Lock()
	gated := g.on && strings.HasPrefix(key, "runs/")
	if gated {
		g.inflight++
		g.max = max(g.max, g.inflight)
		if g.inflight == 2 && !g.closed {
			g.closed = true
			close(g.overlap)
		}
	}
	g.mu.Unlock()
	if gated {
		select {
		case <-g.overlap:
		case <-time.After(3 * time.Second):
		}
		defer func() { g.mu.Lock(); g.inflight--; g.mu.Unlock() }()
	}
	return g.Driver.Get(ctx, key)
}

// TestReaperVisitsRunsConcurrently: one pass visits its due runs
// concurrently (at most reapParallel at a time), and every due sleep still
// fires exactly once with the counters summed over the visits.
func TestReaperVisitsRunsConcurrently(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	g := &gatedRuns{Driver: mem.New().Driver(), overlap: make(chan struct{})}
	e := newTestEngine(t, blob.NewBucket(g), Config{Now: clk.Now})
	register(t, e, "w", cairn.Workflow{Name: "naps", Version: "1", Steps: []cairn.Step{
		{ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Minute)},
	}})
	const n = 3 * reapParallel
	var runs []string
	for range n {
		runs = append(runs, mustStart(t, e, "naps", `{}`))
	}
	clk.Advance(2 * time.Minute)
	g.mu.Lock()
	g.on = true
	g.mu.Unlock()
	st, err := e.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.on = false
	most := g.max
	g.mu.Unlock()
	if st.RunsVisited != n || st.TimersFired != n || st.Errors != 0 {
		t.Fatalf("pass stats %+v, want %d runs visited and %d sleeps fired", st, n, n)
	}
	if most < 2 || most > reapParallel {
		t.Fatalf("at most %d run reads in flight during the pass, want 2..%d", most, reapParallel)
	}
	for _, id := range runs {
		if r := getRun(t, e, id); r.Status != cairn.RunCompleted {
			t.Fatalf("run %s: %s after the pass", id, r.Status)
		}
	}
	// Nothing is due any more: a second pass visits nothing.
	if st := mustReap(t, e); st.RunsVisited != 0 {
		t.Fatalf("second pass visited %d runs", st.RunsVisited)
	}
}
