package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/workers"
)

// A run with a ready step says no_live_worker when no worker seen alive
// serves its workflow@version: not while its worker is alive, once that
// worker has not been seen for longer than the alive window (the reading
// older than its 15 s), and no longer once a worker registers. A run that
// only waits for an event never reads the workers list for it.
func TestNoLiveWorker(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w1", single("one", cairn.Step{ID: "s"}), single("waits", cairn.Step{ID: "w", Kind: cairn.KindWait, Event: "go"})))
	ctx, clk, e, counts := h.ctx, h.clk, h.e, h.counts
	run := mustStart(t, e, "one", `{}`)

	status := func() *cairn.RunProgress {
		t.Helper()
		p, err := e.GetRunStatus(ctx, run, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := status(); p.NoLiveWorker {
		t.Fatal("no_live_worker while w1, registered just now, serves the run")
	}
	clk.Advance(e.workerAliveWindow() + time.Second)
	if p := status(); !p.NoLiveWorker {
		t.Fatal("no no_live_worker once w1 has not been seen for longer than the alive window")
	}
	if r := getRun(t, e, run); !r.NoLiveWorker {
		t.Fatal("GetRun lacks no_live_worker")
	}
	register(t, e, "w2", single("one", cairn.Step{ID: "s"}))
	if p := status(); p.NoLiveWorker {
		t.Fatal("no_live_worker after w2 registered on this instance")
	}

	// A waiting run has nothing ready: no LIST for liveness.
	waiting := mustStart(t, e, "waits", `{}`)
	clk.Advance(e.workerAliveWindow() + time.Minute)
	before := counts.Snapshot()
	p, err := e.GetRunStatus(ctx, waiting, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.NoLiveWorker || counts.Snapshot().Sub(before).List != 0 {
		t.Fatalf("a waiting run: no_live_worker %v, %d LISTs", p.NoLiveWorker, counts.Snapshot().Sub(before).List)
	}
	if s := p.Steps[0]; s.Kind != cairn.KindWait || s.Event != "go" {
		t.Fatalf("a wait step's progress: %+v", s)
	}
}

// ReadHolders fills in who holds each ready step: none before the claim,
// the claiming worker after, with one lease read per ready step.
func TestReadHolders(t *testing.T) {
	h := newHarness(t, wallClock(), counted())
	ctx, e, counts := h.ctx, h.e, h.counts
	wf := cairn.Workflow{Name: "fan", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	register(t, e, "w1", wf)
	run := mustStart(t, e, "fan", `{}`)
	p, err := e.GetRunStatus(ctx, run, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := counts.Snapshot()
	if err := e.ReadHolders(ctx, p); err != nil {
		t.Fatal(err)
	}
	if reads := counts.Snapshot().Sub(before).Reads(); reads != 3 {
		t.Errorf("ReadHolders of 3 ready steps made %d reads, want 3", reads)
	}
	for _, s := range p.Steps {
		if s.Holder != nil {
			t.Fatalf("step %s held before any claim: %+v", s.ID, s.Holder)
		}
	}
	ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	if err := e.ReadHolders(ctx, p); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, s := range p.Steps {
		if s.Holder != nil {
			held++
			if s.ID != ls[0].Step || s.Holder.Worker != "w1" {
				t.Errorf("step %s held by %+v; the claim took %s", s.ID, s.Holder, ls[0].Step)
			}
		}
	}
	if held != 1 || p.HoldersTruncated {
		t.Fatalf("%d steps held (truncated %v), want 1", held, p.HoldersTruncated)
	}
}

// peakGets is a driver that counts the lease reads in flight at once,
// holding each until release is closed or leaseReads are in flight.
type peakGets struct {
	blob.Driver
	mu            sync.Mutex
	inflight, max int
	armed, opened bool
	full          chan struct{}
}

func (p *peakGets) Get(ctx context.Context, key string) (*blob.Object, error) {
	p.mu.Lock()
	counted := p.armed && strings.Contains(key, "leases/")
	if counted {
		p.inflight++
		p.max = max(p.max, p.inflight)
		if p.inflight == leaseReads && !p.opened {
			close(p.full) // once: later reads (the journal's) pass at once
			p.opened = true
		}
	}
	full := p.full
	p.mu.Unlock()
	if counted {
		defer func() { p.mu.Lock(); p.inflight--; p.mu.Unlock() }()
		select { // every read waits until leaseReads are in flight together
		case <-full:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.Driver.Get(ctx, key)
}

// A run's view and journal read the leases of its ready steps
// concurrently (a 10,000-wide fan-out's view was 10,000 reads in a row),
// and still name every holder. The driver holds each lease read until
// leaseReads are in flight at once, so a view reading them one at a time
// would never finish.
func TestRunViewReadsLeasesConcurrently(t *testing.T) {
	d := &peakGets{Driver: mem.New().Driver(), full: make(chan struct{})}
	e := newTestEngine(t, blob.NewBucket(d), Config{})
	const width = 100
	register(t, e, "w", fanOut("fan", width))
	id := mustStart(t, e, "fan", `{}`)
	held := map[string]string{}
	for len(held) < width {
		ls, err := e.Claim(context.Background(), cairn.ClaimRequest{WorkerID: "w", Max: 10, WaitMs: 3000})
		if err != nil || len(ls) == 0 {
			t.Fatalf("claim: %v %v after %d", ls, err, len(held))
		}
		for _, l := range ls {
			held[l.Step] = l.ID
		}
	}
	d.mu.Lock()
	d.armed = true
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := e.GetRun(ctx, id)
	if err != nil {
		t.Fatalf("view (reads one at a time never fill the driver's gate): %v", err)
	}
	n := 0
	for _, s := range v.Steps {
		if _, ok := held[s.ID]; ok {
			if s.Holder == nil || s.Holder.Worker != "w" {
				t.Fatalf("step %s: holder %+v, want worker w", s.ID, s.Holder)
			}
			n++
		}
	}
	if n != width {
		t.Fatalf("%d holders named, want %d", n, width)
	}
	j, err := e.Journal(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, en := range j {
		if en.Type == cairn.JournalStepClaimed {
			claimed++
		}
	}
	if claimed != width {
		t.Fatalf("journal: %d claimed entries, want %d", claimed, width)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.max != leaseReads {
		t.Fatalf("peak lease reads in flight %d, want %d", d.max, leaseReads)
	}
}

// TestWorkerLiveness: claims and heartbeats record that a worker is alive,
// at most once per WorkerSeenEvery per instance; a worker not seen for the
// alive window is listed as gone.
func TestWorkerLiveness(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", single("l", cairn.Step{})), withWorkflows("idle", single("l", cairn.Step{})))
	ctx, clk, e, counts := h.ctx, h.clk, h.e, h.counts
	clk.Advance(e.workerAliveWindow() + time.Second)
	awaitSeen := func(worker string, at time.Time) cairn.WorkerInfo {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			ws, err := e.ListWorkers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range ws {
				if w.ID == worker && !w.LastSeenAt.Before(at) {
					return w
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker %s never recorded as seen at %v: %+v", worker, at, ws)
			}
			runtime.Gosched()
		}
	}
	mustStart(t, e, "l", `{}`)
	seenAt := clk.Now()
	l := claimOne(t, e, "w")
	if w := awaitSeen("w", seenAt); !w.Alive {
		t.Fatalf("a worker that just claimed is not alive: %+v", w)
	}
	// Many calls within the period: no more sightings recorded.
	for range 20 {
		clk.Advance(time.Second)
		if _, err := e.Heartbeat(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := e.workers.LastSeen("w")
	if !last.Equal(seenAt) {
		t.Fatalf("a sighting was recorded at %v, %v after the last one: one per call, not per period", last, last.Sub(seenAt))
	}
	_ = counts
	ws, _ := e.ListWorkers(ctx)
	for _, w := range ws {
		if w.ID == "idle" && w.Alive {
			t.Fatalf("a worker unseen for longer than the alive window is alive: %+v", w)
		}
	}
	// A heartbeat a period later records it again (heartbeats every 10 s
	// meanwhile keep the lease: one lapsed past its TTL is refused).
	for left := WorkerSeenEvery; left > 0; left -= 10 * time.Second {
		clk.Advance(min(left, 10*time.Second))
		if _, err := e.Heartbeat(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
	}
	awaitSeen("w", seenAt.Add(WorkerSeenEvery))
}

// TestSightingsRaceCloseAndSettle: worker sightings start background work
// from request goroutines while Settle and Close wait for that work. A
// server shutting down still answers calls in flight, so neither wait may
// race a sighting starting (sync.WaitGroup forbids an Add concurrent with a
// Wait at zero), and a sighting after Close starts nothing.
func TestSightingsRaceCloseAndSettle(t *testing.T) {
	e := newTestEngine(t, nil, Config{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e.seen(fmt.Sprintf("w-%d-%d", g, i))
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.background.Started.Load() < 200 && time.Now().Before(deadline) {
		e.Settle()
	}
	e.Close()
	close(stop)
	wg.Wait()
	if started := e.background.Started.Load(); started == 0 {
		t.Fatal("no sighting started: the test raced nothing")
	}
	before := e.background.Started.Load()
	e.seen("after-close")
	if e.background.Started.Load() != before {
		t.Fatal("a sighting after Close started background work")
	}
}

// A sighting is written only when it is a change: the record is
// workers.RefreshEvery old (or marked gone since). Short claims (Lambda)
// land on a new environment nearly every time; once the record is fresh,
// none of them writes it, however many instances read it, until it is a
// period old again.
func TestSightingSkipsAFreshRecord(t *testing.T) {
	h := newHarness(t, counted(), withConfig(Config{ClaimHold: -1}))
	ctx, clk, es, counts := h.ctx, h.clk, h.instances(3), h.counts
	register(t, es[0], "w", single("l", cairn.Step{}))
	clk.Advance(workers.RefreshEvery + 10*time.Minute)
	claimOn := func(e *Engine) counting.Snapshot {
		t.Helper()
		before := counts.Snapshot()
		if _, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1}); err != nil {
			t.Fatal(err)
		}
		e.Settle()
		return counts.Snapshot().Sub(before)
	}
	if d := claimOn(es[0]); d.Swap != 1 {
		t.Fatalf("first sighting: %d swaps, want 1 (the record is a period old)", d.Swap)
	}
	clk.Advance(workers.RefreshEvery / 2)
	if d := claimOn(es[1]); d.Swap != 0 {
		t.Fatalf("a sighting half a period after another instance's: %d swaps, want 0", d.Swap)
	}
	clk.Advance(workers.RefreshEvery/2 - time.Second)
	if d := claimOn(es[2]); d.Swap != 0 {
		t.Fatalf("a sighting just under a period after the recorded one: %d swaps, want 0", d.Swap)
	}
	clk.Advance(2 * time.Second)
	if d := claimOn(es[1]); d.Swap != 1 {
		t.Fatalf("a sighting a period after the recorded one: %d swaps, want 1", d.Swap)
	}
}

// A worker whose lease the reaper finds lost (its heartbeats stopped) is
// listed as gone at once, on every instance, and a run waiting on the step
// says no_live_worker, without waiting for the alive window; a call of the
// worker after that is a change, recorded, and it is alive again.
func TestLostLeaseMarksWorkerGone(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", single("one", cairn.Step{ID: "s"})))
	ctx, clk, e := h.ctx, h.clk, h.e
	peer := h.peer()
	run := h.start("one", "")
	h.claim("w1")
	clk.Advance(e.cfg.LeaseTTL + e.cfg.RecoveryWindow + time.Second)
	if st := h.reap(); st.LeasesLost != 1 {
		t.Fatalf("reaper pass: %+v, want one lease lost", st)
	}
	e.Settle()
	clk.Advance(workers.LiveTTL)
	if p, err := peer.GetRunStatus(ctx, run, 0, 0); err != nil || !p.NoLiveWorker {
		t.Fatalf("status after w1's lease was lost: no_live_worker %v, %v; want true", p != nil && p.NoLiveWorker, err)
	}
	if soleWorker(t, e).Alive || soleWorker(t, peer).Alive {
		t.Fatal("a worker whose lease was lost is listed alive")
	}
	clk.Advance(workers.CacheTTL) // the instance reads w1's record again on its next call
	if _, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 0}); err != nil {
		t.Fatal(err)
	}
	e.Settle()
	if !soleWorker(t, peer).Alive {
		t.Fatal("w1 called after it was marked gone and is still listed gone on another instance")
	}
}

// Records of workers gone for longer than the alive window plus
// workers.ExpireAfter are deleted by the listing that finds them (a worker
// that stopped, one that died): restarts under new ids do not pile up.
// Until then they are listed as gone; a worker registering again is new.
func TestLongGoneWorkerRecordsExpire(t *testing.T) {
	h := newHarness(t, withWorkflows("died", single("one", cairn.Step{})), withWorkflows("stopped", single("one", cairn.Step{})))
	ctx, clk, e := h.ctx, h.clk, h.e
	if err := e.StopWorker(ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		t.Helper()
		ws, err := e.ListWorkers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.Settle()
		var ids []string
		for _, w := range ws {
			if w.Alive {
				t.Fatalf("worker %s alive: %+v", w.ID, w)
			}
			ids = append(ids, w.ID)
		}
		return ids
	}
	clk.Advance(e.workerAliveWindow() + workers.ExpireAfter/2)
	if ids := list(); len(ids) != 2 {
		t.Fatalf("workers gone for less than the expiry: listed %v, want both", ids)
	}
	clk.Advance(workers.ExpireAfter)
	if ids := list(); len(ids) != 0 {
		t.Fatalf("workers gone for longer than the expiry: listed %v, want none", ids)
	}
	if objs, err := h.store.ListAll(ctx, e.keys.WorkersPrefix()); err != nil || len(objs) != 0 {
		t.Fatalf("worker records left: %d %v", len(objs), err)
	}
	register(t, e, "died", single("one", cairn.Step{}))
	if ws, err := e.ListWorkers(ctx); err != nil || len(ws) != 1 || !ws[0].Alive {
		t.Fatalf("a worker that registered again: %+v %v", ws, err)
	}
}

// soleWorker is the one worker e lists.
func soleWorker(t testing.TB, e *Engine) cairn.WorkerInfo {
	t.Helper()
	ws, err := e.ListWorkers(context.Background())
	if err != nil || len(ws) != 1 {
		t.Fatalf("workers %+v %v", ws, err)
	}
	return ws[0]
}
