package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
	notifyfaults "github.com/cairn-dev/cairn/notify/faults"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

// TestReaperRacesItselfAndDies: leases of 40 runs expire; a reaper pass is
// killed midway (the store fails after some writes), then two reapers run
// at once on two instances. Every lost lease is recovered exactly once:
// one lost attempt and one new attempt per step, nothing applied twice.
func TestReaperRacesItselfAndDies(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := newClock()
			store, ctl := faults.Wrap(open(t), faults.Profile{})
			// Instances share a fan-out bus, as deployments do (NATS, SQS).
			cfg := Config{Now: clk.Now, LeaseTTL: 10 * time.Second, AnnounceAfter: time.Hour, Bus: notifymem.New()}
			e := newTestEngine(t, store, cfg)
			register(t, e, "w", single("one", cairn.Step{}))
			const n = 40
			var runs []string
			for range n {
				runs = append(runs, mustStart(t, e, "one", `{}`))
			}
			ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 100, WaitMs: 2000})
			for len(ls) < n && err == nil {
				var more []cairn.Lease
				more, err = e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 100, WaitMs: 2000})
				ls = append(ls, more...)
			}
			if err != nil || len(ls) != n {
				t.Fatalf("claimed %d of %d: %v", len(ls), n, err)
			}
			e.Settle()               // worker sightings are not the reaper's writes
			clk.Advance(time.Minute) // every lease is long expired

			// Pass 1 dies after a few writes.
			ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpSwap, faults.OpPut}, Skip: 15, Err: errors.New("reaper killed")})
			st, _ := e.Reap(ctx)
			ctl.Clear()
			t.Logf("killed pass: %+v", st)

			// Two reapers at once, on two instances.
			e2 := newTestEngine(t, store, cfg)
			var wg sync.WaitGroup
			stats := make([]ReapStats, 2)
			for i, eng := range []*Engine{e, e2} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, err := eng.Reap(ctx)
					if err != nil {
						t.Error(err)
					}
					stats[i] = s
				}()
			}
			wg.Wait()
			t.Logf("concurrent passes: %+v / %+v", stats[0], stats[1])

			for _, id := range runs {
				r := getRun(t, e2, id)
				s := stepOf(r, "only")
				if s.Status != cairn.StepReady || s.Attempt != 2 {
					t.Fatalf("run %s: step %s attempt %d, want ready attempt 2", id, s.Status, s.Attempt)
				}
				if len(s.Attempts) != 1 || s.Attempts[0].Outcome != "lost" {
					t.Fatalf("run %s attempts %+v, want one lost", id, s.Attempts)
				}
				if c := countJournal(t, e2, id, "lease_lost", ""); c != 1 {
					t.Fatalf("run %s: %d lease_lost entries, want 1", id, c)
				}
			}
			// And the recovered attempts run to completion. The hints of
			// those the killed pass recovered went out before e2
			// subscribed: e2 finds them by its fallback scans, which read
			// scanRuns runs each from a random one on, once per
			// FallbackInterval, so a few scans cover them all.
			got, scans := 0, 1
			for got < n {
				ls, err := e2.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 100, WaitMs: 2000})
				if err != nil {
					t.Fatal(err)
				}
				if len(ls) == 0 {
					if scans > n/scanRuns+1 {
						t.Fatalf("only %d of %d recovered attempts claimable after %d scans", got, n, scans)
					}
					clk.Advance(DefaultFallbackInterval)
					scans++
					continue
				}
				for _, l := range ls {
					if _, err := e2.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
						t.Fatal(err)
					}
				}
				got += len(ls)
			}
		})
	}
}

// TestAllNotificationsDropped: the bus loses every hint; workers on
// another instance still get all the work through the fallback scan and
// the reaper, within the fallback bound.
func TestAllNotificationsDropped(t *testing.T) {
	bus := notifyfaults.DropAll(notifymem.New())
	h := newHarness(t, withConfig(Config{Bus: bus, FallbackInterval: 300 * time.Millisecond, AnnounceAfter: 100 * time.Millisecond}), wallClock())
	ctx, starter, worker := h.ctx, h.e, h.peer()
	register(t, worker, "w", linear("lin", "1", 3))
	var runs []string
	for range 5 {
		runs = append(runs, mustStart(t, starter, "lin", `{"n":1}`))
	}
	stop := make(chan struct{})
	go func() { // the reaper, every 100 ms, on a third instance
		r := h.peer()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				r.Reap(ctx)
			}
		}
	}()
	defer close(stop)
	start := time.Now()
	for done := 0; done < 15; {
		ls, err := worker.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 5, WaitMs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if _, err := worker.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"x"`)}); err != nil {
				t.Fatal(err)
			}
			done++
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("only %d of 15 steps done after 30s without notifications", done)
		}
	}
	for _, id := range runs {
		if r := getRun(t, starter, id); r.Status != cairn.RunCompleted {
			t.Fatalf("run %s %s", id, r.Status)
		}
	}
	t.Logf("15 steps of 5 runs done in %v with every notification dropped (fallback every %v)", time.Since(start).Round(time.Millisecond), h.cfg.FallbackInterval)
}

// TestTimers covers sleeps, wait timeouts, events before waits, run
// deadlines and attempt timeouts through the reaper, on every store.
func TestTimers(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, clk, e := h.ctx, h.clk, h.e
		wf := cairn.Workflow{Name: "timers", Version: "1", Steps: []cairn.Step{
			{ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Minute)},
			{ID: "approval", Kind: cairn.KindWait, Event: "approved", WaitTimeout: cairn.Duration(time.Hour), After: []string{"nap"}},
			{ID: "act", After: []string{"approval"}, Input: json.RawMessage(`{"by": "${steps.approval.output.by}"}`), Timeout: cairn.Duration(time.Minute)},
		}}
		register(t, e, "w", wf)

		// 1. Sleep, event sent early (kept), wait consumes it.
		run := mustStart(t, e, "timers", `{}`)
		if res, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "approved", Payload: json.RawMessage(`{"by":"ann"}`), ID: "ev1"}); err != nil || !res.Recorded {
			t.Fatalf("early event: %+v %v", res, err)
		}
		if res, _ := e.SendEvent(ctx, run, cairn.EventRequest{Name: "approved", ID: "ev1"}); !res.Duplicate {
			t.Fatal("same event id was not recognised as a duplicate")
		}
		clk.Advance(30 * time.Second)
		e.Reap(ctx)
		if s := stepOf(getRun(t, e, run), "nap"); s.Status != cairn.StepSleeping {
			t.Fatalf("nap %s before its time", s.Status)
		}
		clk.Advance(31 * time.Second)
		if _, err := e.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		r := getRun(t, e, run)
		if stepOf(r, "nap").Status != cairn.StepCompleted || stepOf(r, "approval").Status != cairn.StepCompleted || stepOf(r, "act").Status != cairn.StepReady {
			t.Fatalf("after sleep: %+v", r.Steps)
		}
		// 2. The attempt timeout fails the attempt (class timeout) and retries.
		l := claimOne(t, e, "w")
		if string(l.Input) != `{"by":"ann"}` {
			t.Fatalf("input %s", l.Input)
		}
		// Heartbeats within the TTL keep the lease (one that lapsed past
		// its TTL and recovery window is refused: TestLapsedLeaseRefusesHeartbeat).
		for _, d := range []time.Duration{29 * time.Second, 30 * time.Second} {
			clk.Advance(d)
			if _, err := e.Heartbeat(ctx, l.ID); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(2 * time.Second)
		// Past timeout_at the attempt is over: the heartbeat is refused, and
		// the timeout is already the run's decided outcome when it is.
		_, err := e.Heartbeat(ctx, l.ID)
		wantReason(t, err, cairn.ReasonFenced)
		s := stepOf(getRun(t, e, run), "act")
		if s.Attempt != 2 || s.Failures != 1 || s.Attempts[0].Error == nil || s.Attempts[0].Error.Class != cairn.ClassTimeout || s.Attempts[0].Outcome != "timed_out" {
			t.Fatalf("after timeout: %+v", s)
		}
		if st, _ := e.Reap(ctx); st.TimedOut != 0 {
			t.Fatalf("reaper stats %+v: the timeout was recorded twice", st)
		}
		_, err = e.Complete(ctx, l.ID, cairn.CompleteRequest{})
		wantReason(t, err, cairn.ReasonFenced) // never already_applied: its output would be dropped
		// The reaper alone also times an attempt out, heartbeats or not.
		clk.Advance(5 * time.Second) // the retry backoff
		e.Reap(ctx)
		l2 := claimOne(t, e, "w")
		clk.Advance(61 * time.Second)
		if st, _ := e.Reap(ctx); st.TimedOut != 1 {
			t.Fatalf("reaper stats %+v, want one timed out attempt", st)
		}
		_, err = e.Heartbeat(ctx, l2.ID)
		wantReason(t, err, cairn.ReasonFenced)

		// 3. A wait that times out fails the run.
		run2 := mustStart(t, e, "timers", `{}`)
		clk.Advance(2 * time.Minute)
		e.Reap(ctx)
		clk.Advance(2 * time.Hour)
		e.Reap(ctx)
		if r := getRun(t, e, run2); r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassTimeout || r.Error.Step != "approval" {
			t.Fatalf("run2 %s %+v", r.Status, r.Error)
		}
		// 4. A run deadline times the run out.
		dl := clk.Now().Add(time.Minute)
		res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "timers", Deadline: &dl})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		e.Reap(ctx)
		if r := getRun(t, e, res.Run.ID); r.Status != cairn.RunTimedOut {
			t.Fatalf("run past deadline: %s", r.Status)
		}
		_, err = e.SendEvent(ctx, res.Run.ID, cairn.EventRequest{Name: "approved"})
		if err == nil {
			t.Fatal("event to a timed-out run accepted")
		}
	})
}

// TestRetriesAndClasses covers retry with backoff, non-retryable classes,
// fatal, unservable (no budget spent, worker avoided), budget exhaustion,
// dead-lettering after max_deliveries and the render error class.
func TestRetriesAndClasses(t *testing.T) {
	h := newHarness(t, withConfig(Config{LeaseTTL: 10 * time.Second}))
	ctx, clk, e := h.ctx, h.clk, h.e
	retry := &cairn.RetryPolicy{MaxAttempts: 3, InitialBackoff: cairn.Duration(time.Second), NonRetryable: []string{"bad_input"}}
	register(t, e, "w", single("r", cairn.Step{Retry: retry, MaxDeliveries: 2}))
	register(t, e, "w2", single("r", cairn.Step{Retry: retry, MaxDeliveries: 2}))
	fail := func(l cairn.Lease, class string) {
		t.Helper()
		if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: class, Message: "boom " + class}}); err != nil {
			t.Fatal(err)
		}
	}
	claimAfter := func(worker string, d time.Duration) cairn.Lease {
		t.Helper()
		clk.Advance(d)
		return claimOne(t, e, worker)
	}
	// retryable ×2 then success: budget 3.
	run := mustStart(t, e, "r", `{}`)
	fail(claimOne(t, e, "w"), "retryable")
	// Not claimable before the backoff.
	if ls, _ := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 0}); len(ls) != 0 {
		t.Fatal("claimed during backoff")
	}
	fail(claimAfter("w", 2*time.Second), "some_typed_class")
	l := claimAfter("w", 5*time.Second)
	if l.Attempt != 3 {
		t.Fatalf("attempt %d", l.Attempt)
	}
	// unservable: no budget spent, the same worker is avoided, another gets it.
	fail(l, "unservable")
	if ls, _ := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 0}); len(ls) != 0 {
		t.Fatal("unservable attempt offered to the same worker again")
	}
	l = claimOne(t, e, "w2")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"ok"`)}); err != nil {
		t.Fatal(err)
	}
	if r := getRun(t, e, run); r.Status != cairn.RunCompleted || stepOf(r, "only").Failures != 2 {
		t.Fatalf("run %s failures %d", r.Status, stepOf(r, "only").Failures)
	}
	// Budget exhausted → run failed with the last error.
	run = mustStart(t, e, "r", `{}`)
	fail(claimOne(t, e, "w"), "retryable")
	fail(claimAfter("w", 2*time.Second), "retryable")
	fail(claimAfter("w", 5*time.Second), "retryable")
	if r := getRun(t, e, run); r.Status != cairn.RunFailed || r.Error.Class != "retryable" {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	// Non-retryable class and fatal fail at once.
	for _, class := range []string{"bad_input", "fatal"} {
		run = mustStart(t, e, "r", `{}`)
		fail(claimOne(t, e, "w"), class)
		if r := getRun(t, e, run); r.Status != cairn.RunFailed || r.Error.Class != class {
			t.Fatalf("%s: run %s %+v", class, r.Status, r.Error)
		}
	}
	// Leases lost max_deliveries times: dead-lettered.
	run = mustStart(t, e, "r", `{}`)
	claimOne(t, e, "w")
	clk.Advance(time.Minute)
	e.Reap(ctx)
	claimOne(t, e, "w")
	clk.Advance(time.Minute)
	e.Reap(ctx)
	if r := getRun(t, e, run); r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassDeadLettered {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	// A template that fails at run time: render_error, visible in the journal.
	register(t, e, "w", single("tpl", cairn.Step{Input: json.RawMessage(`{"x": "${input.missing.deeper}"}`)}))
	run = mustStart(t, e, "tpl", `{}`)
	if ls, _ := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 200}); len(ls) != 0 {
		t.Fatal("a step whose input cannot render was offered")
	}
	r := getRun(t, e, run)
	if r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassRenderError || countJournal(t, e, run, "step_failed", "only") != 1 {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	t.Log(r.Error.Message)
}

func TestReaperCostWithIdleRuns(t *testing.T) {
	for _, n := range []int{0, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ops := reaperOpsWithIdleRuns(t, n)
			t.Logf("reaper pass with %d idle runs: %v", n, ops)
			if ops.List != 1 || ops.Reads() != 0 || ops.Writes() != 0 {
				t.Fatalf("a reaper pass over %d idle runs cost %v, want one LIST", n, ops)
			}
		})
	}
}

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
