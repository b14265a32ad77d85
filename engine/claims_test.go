package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
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
						ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: worker, Max: 4, WaitMs: 300})
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
									_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)})
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

// A claim's create-only lease write that landed but whose answer the claim
// never saw must not leave the step leased to nobody. Without a reaper (as
// in TestConcurrentClaimersExactlyOnce) nothing else ever frees the lease;
// with one the step waits LeaseTTL+RecoveryWindow and burns an attempt.
func TestClaimDoesNotOrphanItsOwnLease(t *testing.T) {
	cases := map[string][]faults.Rule{
		// The GCS and Azure drivers retry a conditional write whose answer
		// was lost; the retry meets the first attempt's object: 412
		// (blob/gcs/gcs.go, "re-read and re-decide").
		"retry-meets-own-write": {{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "leases/", After: true, Times: 1,
			Err: retriedPrecondition()}},
		// The outcome is unknown and the read-back fails too: the hint is
		// put back and the next claimOne's create meets the lease.
		"unknown-and-read-back-fails": {
			{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "leases/", After: true, Times: 1},
			{Ops: []faults.Op{faults.OpGet}, KeyPrefix: "leases/", Times: 1},
		},
	}
	for name, rules := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withFaults(faults.Profile{}), withConfig(Config{FallbackInterval: 50 * time.Millisecond}), wallClock(), withWorkflows("w", linear("one", "1", 1)))
			ctx, store, ctl, e := h.ctx, h.store, h.faults, h.e
			run := mustStart(t, e, "one", `{"n":1}`)
			ctl.Inject(rules...)
			deadline := time.Now().Add(3 * time.Second) // 60 fallback intervals
			for time.Now().Before(deadline) {
				ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 500})
				if err != nil {
					t.Fatal(err)
				}
				if len(ls) == 1 {
					if ls[0].Run != run || ls[0].Attempt != 1 {
						t.Fatalf("got %+v", ls[0])
					}
					if _, err := e.Started(ctx, ls[0].ID); err != nil {
						t.Fatalf("the lease handed out is not the stored one: %v", err)
					}
					return
				}
			}
			o, err := store.Get(ctx, e.keys.Lease(run, "sa", 1))
			t.Fatalf("step sa of %s was not leased in 3 s (60 fallback intervals); lease object: %s (err %v)", run, objData(o), err)
		})
	}
}

func objData(o *blob.Object) string {
	if o == nil {
		return "<none>"
	}
	return string(o.Data)
}

func retriedPrecondition() error {
	// What blob/gcs now returns for a 412 after more than one attempt.
	return fmt.Errorf("%w: %w", blob.ErrRetriedWrite, blob.ErrPreconditionFailed)
}

// TestCompleteClaimNext: a complete with claim_next hands the worker its
// run's next step in the same call (eager dispatch), for the lease's own
// worker; the last step's complete answers no lease; a complete that is
// refused (already applied) claims nothing; claim_next.max out of range
// is refused naming the field.
func TestCompleteClaimNext(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w1", linear("lin", "1", 3)), withWorkflows("w2", linear("lin", "1", 3)))
	ctx, e := h.ctx, h.e
	id := mustStart(t, e, "lin", `{"n": 1}`)
	l := claimOne(t, e, "w1")
	for i := range 3 {
		if l.Run != id || l.Step != stepName(i) {
			t.Fatalf("lease %d is %s/%s, want %s/%s", i, l.Run, l.Step, id, stepName(i))
		}
		res, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), ClaimNext: &cairn.ClaimNext{Max: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if len(res.Leases) != 0 || res.RunStatus != cairn.RunCompleted {
				t.Fatalf("last complete: %d leases, run %s; want none, completed", len(res.Leases), res.RunStatus)
			}
			break
		}
		if len(res.Leases) != 1 {
			t.Fatalf("complete of s%d returned %d leases, want the next step", i, len(res.Leases))
		}
		prev := l
		l = res.Leases[0]
		tok, err := keys.ParseLease(l.ID)
		if err != nil || tok.Worker != "w1" {
			t.Fatalf("eager lease is for %q (%v), want the completing worker w1", tok.Worker, err)
		}
		// The same complete again is already_applied and claims nothing.
		_, err = e.Complete(ctx, prev.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), ClaimNext: &cairn.ClaimNext{Max: 1}})
		wantReason(t, err, cairn.ReasonAlreadyApplied)
	}
	if r := getRun(t, e, id); r.Status != cairn.RunCompleted || r.StepsDone != 3 {
		t.Fatalf("run is %s with %d steps done", r.Status, r.StepsDone)
	}
	for _, max := range []int{0, 101} {
		_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{ClaimNext: &cairn.ClaimNext{Max: max}})
		var ie *InvalidError
		if !asInvalid(err, &ie) || ie.Field != "claim_next.max" {
			t.Fatalf("claim_next.max %d: %v, want invalid claim_next.max", max, err)
		}
	}
}

func asInvalid(err error, target **InvalidError) bool {
	ie, ok := err.(*InvalidError)
	if ok {
		*target = ie
	}
	return ok
}

// TestEagerAndHeldClaimsRace: workers that complete with claim_next race
// plain held claims on two engine instances over a 100-wide fan-out and
// ten linear runs. Every step is leased exactly once and every run
// completes with one attempt per step.
func TestEagerAndHeldClaimsRace(t *testing.T) {
	h := newHarness(t, withConfig(Config{Bus: notifymem.New(), FallbackInterval: 200 * time.Millisecond}), wallClock())
	ctx, engines := h.ctx, h.instances(2)
	wide, lin := fanOut("wide", 100), linear("lin", "1", 5)
	const workers = 8
	for i := range workers {
		register(t, engines[i%2], fmt.Sprintf("w%d", i), wide, lin)
	}
	runs := []string{mustStart(t, engines[0], "wide", `{}`)}
	for i := range 10 {
		runs = append(runs, mustStart(t, engines[i%2], "lin", `{"n": 1}`))
	}
	want := 101 + 10*5
	var (
		mu     sync.Mutex
		leased = map[string]string{}
		dups   []string
		eager  atomic.Int64
		done   = make(chan struct{})
	)
	record := func(worker string, l cairn.Lease) {
		mu.Lock()
		defer mu.Unlock()
		k := l.Run + "/" + l.Step
		if prev, ok := leased[k]; ok {
			dups = append(dups, fmt.Sprintf("%s to %s and %s", k, prev, worker))
		}
		leased[k] = worker
		if len(leased) == want {
			close(done)
		}
	}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			e, worker := engines[i%2], fmt.Sprintf("w%d", i)
			useEager := i%2 == 0 // half the workers complete with claim_next
			var queue []cairn.Lease
			for {
				finished := false
				select {
				case <-done:
					finished = true // every step leased: finish the queue, claim no more
				default:
				}
				if finished && len(queue) == 0 {
					return
				}
				if len(queue) == 0 {
					ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: worker, Max: 2, WaitMs: 100})
					if err != nil {
						t.Error(err)
						return
					}
					for _, l := range ls {
						record(worker, l)
					}
					queue = append(queue, ls...)
					continue
				}
				l := queue[0]
				queue = queue[1:]
				req := cairn.CompleteRequest{Output: json.RawMessage(`1`)}
				if useEager && !finished {
					req.ClaimNext = &cairn.ClaimNext{Max: 1}
				}
				// Like an SDK worker: a transient failure (the commit ran
				// out of time under contention) is retried; a retry that
				// finds its complete applied is told so and claims nothing.
				var res *cairn.Ended
				for try := 0; ; try++ {
					var err error
					res, err = e.Complete(ctx, l.ID, req)
					if reason, _ := IsRejection(err); reason == cairn.ReasonAlreadyApplied {
						res, err = &cairn.Ended{}, nil
					}
					if err == nil {
						break
					}
					if try == 10 {
						t.Errorf("complete %s/%s: %v", l.Run, l.Step, err)
						return
					}
					spend(50 * time.Millisecond) // the backoff
				}
				for _, n := range res.Leases {
					eager.Add(1)
					record(worker, n)
				}
				queue = append(queue, res.Leases...)
			}
		})
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Error("timed out")
	}
	wg.Wait()
	if len(dups) > 0 {
		t.Fatalf("%d steps leased twice, e.g. %s", len(dups), dups[0])
	}
	if stuck := awaitCompleted(t, engines[0], runs, 10*time.Second); stuck != "" {
		t.Fatal(stuck)
	}
	for _, id := range runs {
		r := getRun(t, engines[0], id)
		for _, s := range r.Steps {
			if len(s.Attempts) != 1 {
				t.Fatalf("step %s of %s had %d attempts", s.ID, id, len(s.Attempts))
			}
		}
	}
	if eager.Load() == 0 {
		t.Fatal("no lease was handed out by a complete: eager dispatch never happened")
	}
	t.Logf("%d leases, %d of them eager", len(leased), eager.Load())
}
