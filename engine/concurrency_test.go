package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	notifymem "github.com/cairn-dev/cairn/notify/mem"

	"github.com/cairn-dev/cairn"
)

// fanOut is a workflow of n parallel task steps and a join.
func fanOut(name string, n int) cairn.Workflow {
	w := cairn.Workflow{Name: name, Version: "1"}
	var ids []string
	for i := range n {
		id := fmt.Sprintf("p%03d", i)
		ids = append(ids, id)
		w.Steps = append(w.Steps, cairn.Step{ID: id, Input: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))})
	}
	w.Steps = append(w.Steps, cairn.Step{ID: "join", After: ids})
	return w
}

// TestConcurrentClaimersExactlyOnce: 32 claimers on 4 engine instances
// (sharing one bucket and a fan-out bus, as API instances behind a load
// balancer share NATS) drain 1,000 ready steps. Every step is leased to
// exactly one worker at a time, none is lost, none is leased twice.
//
// One exception is the protocol's, not a leniency: a lease whose
// heartbeats could not reach the store for its TTL and recovery window
// (a loaded 2-core machine has made emulators take over 10 s a request)
// has lapsed, its complete is refused as fenced, and its step is offered
// again. The test then checks that the engine was right: the lease's
// last extension the worker saw was that long ago (fencing a live lease
// fails the test); the step's next lease is its next attempt, and it is
// the only one re-leased for that reason. Lapses are reported.
func TestConcurrentClaimersExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("claims 1,000 steps; run without -short")
	}
	for name, open := range stores(t) {
		if name == "mem" {
			continue // the real stores are the point here
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, onStore(open(t)), withConfig(Config{Bus: notifymem.New(), FallbackInterval: 200 * time.Millisecond}), wallClock())
			ctx, engines := h.ctx, h.instances(4)
			const runs, width = 10, 100 // 10 runs × 100 parallel steps = 1,000 ready steps
			wf := fanOut("wide", width)
			for i := range 32 {
				register(t, engines[i%4], fmt.Sprintf("w%02d", i), wf)
			}
			var runIDs []string
			for i := range runs {
				runIDs = append(runIDs, mustStart(t, engines[i%4], "wide", `{}`))
			}
			var (
				mu      sync.Mutex
				leased  = map[string][]string{} // run/step → its leases' workers
				lapsed  = map[string]int{}      // run/step → leases fenced as lapsed
				claims  atomic.Int64
				stopped atomic.Bool
			)
			window := engines[0].cfg.RecoveryWindow
			var wg sync.WaitGroup
			for i := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e := engines[i%4]
					worker := fmt.Sprintf("w%02d", i)
					for !stopped.Load() {
						ls, err := e.Claim(ctx, ClaimRequest{WorkerID: worker, Max: 4, WaitMs: 300})
						if err != nil {
							t.Error(err)
							return
						}
						claims.Add(1)
						// Like an SDK worker: the leases held wait their turn
						// under heartbeats (a lease past its TTL and recovery
						// window is lapsed, and its step offered again).
						// expires[i] is the latest expiry the worker was told
						// for ls[i]: the claim's, then each heartbeat's.
						var expMu sync.Mutex
						expires := make([]time.Time, len(ls))
						for i, l := range ls {
							expires[i] = l.ExpiresAt
						}
						beat := make(chan struct{})
						var beats sync.WaitGroup
						if len(ls) > 0 {
							beats.Go(func() {
								tick := time.NewTicker(e.cfg.HeartbeatInterval)
								defer tick.Stop()
								for {
									select {
									case <-beat:
										return
									case <-tick.C:
										for i, l := range ls {
											if st, err := e.Heartbeat(ctx, l.ID); err == nil { // refused once completed: fine
												expMu.Lock()
												expires[i] = st.ExpiresAt
												expMu.Unlock()
											}
										}
									}
								}
							})
						}
						// Like an SDK worker, the leases of one claim run at
						// once (its concurrency), each started then completed.
						var work sync.WaitGroup
						for i, l := range ls {
							work.Go(func() {
								k := l.Run + "/" + l.Step
								mu.Lock()
								leased[k] = append(leased[k], fmt.Sprintf("%s (attempt %d)", worker, l.Attempt))
								mu.Unlock()
								if _, err := e.Started(ctx, l.ID); err != nil {
									t.Error(err)
								}
								// A transient failure (store busy, the commit ran
								// out of time) is retried; complete is idempotent.
								for try := 0; ; try++ {
									_, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`)})
									reason, _ := IsRejection(err)
									if err == nil || reason == cairn.ReasonAlreadyApplied {
										break
									}
									if reason == cairn.ReasonFenced {
										expMu.Lock()
										exp := expires[i]
										expMu.Unlock()
										if early := time.Until(exp.Add(window)); early > 0 {
											t.Errorf("complete %s: %v, %v before the lease could lapse (expiry %s + recovery window %v)", k, err, early, exp.Format(time.RFC3339Nano), window)
										} else {
											t.Logf("complete %s: %v: its heartbeats did not land for %v (lapsed)", k, err, time.Since(exp)+e.cfg.LeaseTTL)
										}
										mu.Lock()
										lapsed[k]++
										mu.Unlock()
										break
									}
									if try == 10 || reason != "" { // a refusal is final
										t.Errorf("complete %s: %v", k, err)
										break
									}
									spend(100 * time.Millisecond) // the backoff
								}
							})
						}
						work.Wait()
						close(beat)
						beats.Wait()
					}
				}()
			}
			stuck := awaitCompleted(t, engines[0], runIDs, 4*time.Minute)
			stopped.Store(true)
			wg.Wait()
			if stuck != "" {
				t.Fatal(stuck)
			}
			// Each step leased once, and once more per lapse, never
			// twice with the same attempt (attempts are numbered).
			var dups []string
			for k, ws := range leased {
				if len(ws) != 1+lapsed[k] {
					dups = append(dups, fmt.Sprintf("%s leased to %s, %d lapsed", k, strings.Join(ws, ", "), lapsed[k]))
				}
			}
			if len(dups) > 0 {
				t.Fatalf("%d steps leased twice, e.g. %s", len(dups), dups[0])
			}
			if want := runs * (width + 1); len(leased) != want {
				t.Fatalf("%d steps leased, want %d", len(leased), want)
			}
			for _, id := range runIDs {
				r := getRun(t, engines[0], id)
				if r.Status != cairn.RunCompleted {
					t.Fatalf("run %s is %s with %d/%d steps done", id, r.Status, r.StepsDone, r.StepsTotal)
				}
				for _, s := range r.Steps {
					if want := 1 + lapsed[id+"/"+s.ID]; len(s.Attempts) != want {
						t.Fatalf("step %s of run %s had %d attempts, want %d (%d lapsed)", s.ID, id, len(s.Attempts), want, want-1)
					}
				}
			}
			n := 0
			for _, c := range lapsed {
				n += c
			}
			t.Logf("%d steps leased over %d claim calls by 32 claimers on 4 instances; %d leases lapsed", len(leased), claims.Load(), n)
		})
	}
}
