package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// timerPuts counts the writes of timer objects that reach the store.
type timerPuts struct {
	blob.Driver
	n atomic.Int64
}

func (s *timerPuts) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	v, err := s.Driver.Put(ctx, key, data, opts)
	if err == nil && strings.Contains(key, "timers/") {
		s.n.Add(1)
	}
	return v, err
}

// groupHarness is a harness on a store whose writes take write (a cloud
// store's round trip: starts overlap while their timers are written),
// counting the timer writes, with workflow "x" (one step) registered.
func groupHarness(t *testing.T, write time.Duration, cfg Config, opts ...harnessOption) (*harness, *faults.Store, *timerPuts) {
	t.Helper()
	slow, ctl := faults.Wrap(mem.New(), faults.Profile{Write: faults.Latency{P50: write}})
	puts := &timerPuts{Driver: slow.Driver()}
	opts = append([]harnessOption{onStore(blob.NewBucket(puts)), withConfig(cfg), withWorkflows("w", single("x", cairn.Step{}))}, opts...)
	return newHarness(t, opts...), ctl, puts
}

// startMany starts n runs of "x" on e at once and returns the ids of
// those that started and the errors of those that did not.
func startMany(e *Engine, n int) (ids []string, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := e.StartRun(context.Background(), cairn.StartRequest{Workflow: "x"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ids = append(ids, res.Run.ID)
		})
	}
	wg.Wait()
	return ids, errs
}

// timerIndex reads the timer index: how many timer objects name each run
// (its own, or a group timer listing it), and the group timers' keys with
// the runs each lists.
func timerIndex(t *testing.T, e *Engine) (perRun map[string]int, groups map[string][]string) {
	t.Helper()
	ctx := context.Background()
	all, err := e.store.ListAll(ctx, e.keys.TimersPrefix())
	if err != nil {
		t.Fatal(err)
	}
	perRun, groups = map[string]int{}, map[string][]string{}
	for _, a := range all {
		_, name, ok := e.keys.ParseTimer(a.Key)
		if !ok {
			t.Fatalf("timer key %s does not parse", a.Key)
		}
		if _, ok := timer.GroupID(name); !ok {
			perRun[name]++
			continue
		}
		o, err := e.store.Get(ctx, a.Key)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Runs []string }
		if err := json.Unmarshal(o.Data, &body); err != nil {
			t.Fatalf("group timer %s: %v", a.Key, err)
		}
		groups[a.Key] = body.Runs
		for _, r := range body.Runs {
			perRun[r]++
		}
	}
	return perRun, groups
}

// someGroup is a group timer of groups listing at least two runs.
func someGroup(t *testing.T, groups map[string][]string) (string, []string) {
	t.Helper()
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(groups[k]) >= 2 {
			return k, groups[k]
		}
	}
	t.Fatalf("no group timer formed (%v): overlapping starts did not share a timer write; the test proves nothing", groups)
	return "", nil
}

// TestConcurrentStartsShareTimers: 100 starts at once on one instance,
// over a store whose writes take 20 ms, write far fewer timer objects than
// runs, every run listed by exactly one; and a reaper pass once they are
// due visits every run through them: each unclaimed ready step is
// announced, each run re-armed with a timer of its own, and the group
// timers are deleted.
func TestConcurrentStartsShareTimers(t *testing.T) {
	const n = 100
	h, _, puts := groupHarness(t, 20*time.Millisecond, Config{})
	warmUp(t, h.e, "w")
	puts.n.Store(0)
	ids, errs := startMany(h.e, n)
	if len(errs) > 0 {
		t.Fatalf("%d starts failed: %v", len(errs), errs[0])
	}
	writes := puts.n.Load()
	perRun, groups := timerIndex(t, h.e)
	t.Logf("%d concurrent starts: %d timer writes (%.1f runs per write), %d group timers", n, writes, float64(n)/float64(writes), len(groups))
	if writes*4 > n {
		t.Fatalf("%d concurrent starts wrote %d timer objects, want at most %d: starts did not share timer writes (groups %v)", n, writes, n/4, groups)
	}
	for _, id := range ids {
		if perRun[id] != 1 {
			t.Fatalf("run %s is named by %d timer objects, want 1 (index %v)", id, perRun[id], perRun)
		}
	}

	h.clk.Advance(h.e.cfg.ActiveCheckInterval + timer.Lead + 2*time.Second)
	reaper := h.uncountedPeer()
	st, err := reaper.Reap(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.RunsVisited != n || st.Announced != n || st.Rearmed != n || st.Errors != 0 {
		t.Fatalf("a pass over %d group timers: %+v; want %d runs visited, announced and re-armed, no errors", len(groups), st, n)
	}
	perRun, groups = timerIndex(t, h.e)
	if len(groups) != 0 {
		t.Fatalf("group timers left after every run they list was visited: %v", groups)
	}
	for _, id := range ids {
		if perRun[id] != 1 {
			t.Fatalf("run %s has %d timers after the pass, want its re-armed one", id, perRun[id])
		}
	}
}

// TestLoneStartWritesItsOwnTimer: a start that overlaps no other writes
// its run's own timer, as before group timers: key timers/<due>/<run>,
// body {"run":"<run>"}.
func TestLoneStartWritesItsOwnTimer(t *testing.T) {
	h, _, puts := groupHarness(t, 0, Config{})
	warmUp(t, h.e, "w")
	puts.n.Store(0)
	id := h.start("x", "")
	all, err := h.store.ListAll(h.ctx, h.e.keys.TimersPrefix())
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.e.readRun(h.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if puts.n.Load() != 1 || len(all) != 1 || all[0].Key != h.e.keys.Timer(*r.TimerAt, id) {
		t.Fatalf("a lone start wrote %d timers: %v; want %s", puts.n.Load(), all, h.e.keys.Timer(*r.TimerAt, id))
	}
	o, err := h.store.Get(h.ctx, all[0].Key)
	if err != nil || string(o.Data) != `{"run":"`+id+`"}` {
		t.Fatalf("lone start's timer body %q (%v)", o.Data, err)
	}
}

// TestGroupTimerOfRefusedStartsKeptUntilGrace: starts whose run records
// the store refuses leave no run; their group timer (other runs' too, as
// far as a start knows) is not deleted by the start but by the reaper, and
// only once OrphanGrace past due: before that a start may still be
// writing its record.
func TestGroupTimerOfRefusedStartsKeptUntilGrace(t *testing.T) {
	defer func(d time.Duration) { startRetryBase = d }(startRetryBase)
	startRetryBase = time.Millisecond
	h, ctl, _ := groupHarness(t, 20*time.Millisecond, Config{ShedAbove: -1})
	warmUp(t, h.e, "w")
	failRunCreates(ctl, h.e, faults.Rule{Err: blob.ErrThrottled})
	ids, errs := startMany(h.e, 30)
	if len(ids) != 0 {
		t.Fatalf("%d starts succeeded with every run create refused", len(ids))
	}
	for _, err := range errs {
		if u := (*UnavailableError)(nil); !errors.As(err, &u) {
			t.Fatalf("refused start: %v, want unavailable", err)
		}
	}
	perRun, groups := timerIndex(t, h.e)
	key, _ := someGroup(t, groups)
	listed := map[string]bool{}
	for _, rs := range groups {
		for _, r := range rs {
			listed[r] = true
		}
	}
	for run, n := range perRun {
		if !listed[run] {
			t.Fatalf("run %s of a refused start kept its own timer (%d): the start deletes it", run, n)
		}
	}
	at, _, _ := h.e.keys.ParseTimer(key)
	h.clk.Advance(at.Sub(h.clk.Now()) + time.Second)
	reaper := h.uncountedPeer()
	st, err := reaper.Reap(h.ctx)
	if err != nil || st.Errors != 0 {
		t.Fatalf("pass: %+v %v", st, err)
	}
	if _, left := timerIndex(t, h.e); len(left) != len(groups) {
		t.Fatalf("young group timers of refused starts dropped: %d of %d left", len(left), len(groups))
	}
	h.clk.Advance(reaper.timers.OrphanGrace)
	if st, err = reaper.Reap(h.ctx); err != nil || st.Errors != 0 {
		t.Fatalf("pass: %+v %v", st, err)
	}
	if _, left := timerIndex(t, h.e); len(left) != 0 {
		t.Fatalf("group timers of refused starts kept past OrphanGrace: %v", left)
	}
}

// TestGroupTimerKeptWhileAVisitFails: a pass whose visit of one run a
// group timer lists fails (its record cannot be read) visits the others
// but keeps the group timer; the next pass visits the run and deletes it.
func TestGroupTimerKeptWhileAVisitFails(t *testing.T) {
	h, ctl, _ := groupHarness(t, 20*time.Millisecond, Config{})
	warmUp(t, h.e, "w")
	if _, errs := startMany(h.e, 20); len(errs) > 0 {
		t.Fatal(errs[0])
	}
	_, groups := timerIndex(t, h.e)
	key, runs := someGroup(t, groups)
	victim := runs[1]
	ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpGet}, KeyPrefix: h.e.keys.Run(victim)})
	at, _, _ := h.e.keys.ParseTimer(key)
	h.clk.Advance(at.Sub(h.clk.Now()) + h.e.cfg.AnnounceAfter)
	reaper := h.uncountedPeer()
	st, err := reaper.Reap(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Errors != 1 || st.Announced != 19 {
		t.Fatalf("pass with run %s unreadable: %+v; want 1 error, the 19 others announced", victim, st)
	}
	if _, err := h.store.Stat(h.ctx, key); err != nil {
		t.Fatalf("group timer %s dropped though the visit of its run %s failed: %v", key, victim, err)
	}
	ctl.Clear()
	if st, err = reaper.Reap(h.ctx); err != nil || st.Errors != 0 || st.RunsVisited < 1 {
		t.Fatalf("next pass: %+v %v", st, err)
	}
	if _, err := h.store.Stat(h.ctx, key); !isNotFound(err) {
		t.Fatalf("group timer %s kept after every run it lists was visited: %v", key, err)
	}
	if perRun, _ := timerIndex(t, h.e); perRun[victim] != 1 {
		t.Fatalf("run %s has %d timers after its visit, want its own re-armed one", victim, perRun[victim])
	}
}

// TestFallbackScanFindsGroupedRuns: with no bus, runs started at once on
// instance A (their hints in A's hub, where no claim waits) are found by
// claims on instance B through its fallback scans, also those whose only
// timer is a group timer: the scan reads the runs it lists.
func TestFallbackScanFindsGroupedRuns(t *testing.T) {
	const n = 24
	h, _, _ := groupHarness(t, 20*time.Millisecond, Config{FallbackInterval: 20 * time.Millisecond}, wallClock())
	a, b := h.e, h.peer()
	register(t, b, "w", single("x", cairn.Step{}))
	ids, errs := startMany(a, n)
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	_, groups := timerIndex(t, a)
	_, grouped := someGroup(t, groups)
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(left) > 0 && time.Now().Before(deadline) {
		ls, err := b.Claim(h.ctx, cairn.ClaimRequest{WorkerID: "w", Max: n, WaitMs: 200})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			delete(left, l.Run)
		}
	}
	if len(left) > 0 {
		var missed []string
		for _, id := range grouped {
			if left[id] {
				missed = append(missed, id)
			}
		}
		t.Fatalf("B's fallback scans did not find %d of %d runs in 10 s; %d of them listed by group timer(s) %v (e.g. missed %v)", len(left), n, len(missed), len(groups), missed)
	}
}
