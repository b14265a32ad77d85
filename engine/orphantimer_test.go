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
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// stallRunCreate holds the first create of a run record until release is
// closed, after closing reached: a start paused between its timer and its
// record (a slow store, a SIGSTOPped process).
type stallRunCreate struct {
	blob.Driver
	once             sync.Once
	reached, release chan struct{}
}

func (s *stallRunCreate) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	if opts.IfNotExist && strings.Contains(key, "runs/") {
		first := false
		s.once.Do(func() { first = true })
		if first {
			close(s.reached)
			<-s.release
		}
	}
	return s.Driver.Put(ctx, key, data, opts)
}

// TestReaperKeepsTimerOfRunBeingStarted: a start writes the run's timer,
// then stalls before its record while the timer falls due and a reaper
// pass finds no run. The pass must keep the timer: once the record lands,
// an instance that never heard the start's hint (no bus) finds the step
// through the timer index. Found by the chaos round (seed 106061104, a
// chaos-slow run left ready for 4 minutes on the file store with no bus).
// A timer whose run never appears is dropped once the timer index's OrphanGrace has passed.
func TestReaperKeepsTimerOfRunBeingStarted(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	st := &stallRunCreate{Driver: mem.New().Driver(), reached: make(chan struct{}), release: make(chan struct{})}
	store := blob.NewBucket(st)
	cfg := Config{Now: clk.Now, LeaseTTL: 5 * time.Second, MaxRequestTime: 30 * time.Second, FallbackInterval: 10 * time.Millisecond}
	e := newTestEngine(t, store, cfg)
	register(t, e, "w", linear("lin", "1", 1))

	started := make(chan error, 1)
	go func() {
		_, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lin"})
		started <- err
	}()
	select {
	case <-st.reached:
	case err := <-started:
		t.Fatalf("start finished without creating a run record: %v", err)
	}
	// The timer (due a LeaseTTL after the start) is due now; the run is
	// not there yet.
	clk.Advance(10 * time.Second)
	reaper := newTestEngine(t, store, cfg)
	stats, err := reaper.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.TimersDue == 0 {
		t.Fatal("the start's timer was not due: the test proves nothing")
	}
	close(st.release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}

	other := newTestEngine(t, store, cfg)
	ls, err := other.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1, WaitMs: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 {
		t.Fatalf("an instance without the start's hint claimed %d leases: the run lost its timer", len(ls))
	}

	// An orphan: a timer whose start died before its record. Kept while
	// young, dropped once OrphanGrace past due.
	orphan := newRunID(clk.Now())
	due := timer.Due(clk.Now(), clk.Now())
	key, err := reaper.timers.Put(ctx, orphan, due)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(due.Sub(clk.Now()) + time.Second)
	if _, err := reaper.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(ctx, key); err != nil {
		t.Fatalf("a young orphan timer was dropped: %v", err)
	}
	clk.Advance(reaper.timers.OrphanGrace)
	if _, err := reaper.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(ctx, key); !isNotFound(err) {
		t.Fatalf("an orphan timer past its grace was kept: %v", err)
	}
}
