package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/mem"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

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
		res, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`), ClaimNext: &ClaimNext{Max: 1}})
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
		tok, err := parseLeaseID(l.ID)
		if err != nil || tok.Worker != "w1" {
			t.Fatalf("eager lease is for %q (%v), want the completing worker w1", tok.Worker, err)
		}
		// The same complete again is already_applied and claims nothing.
		_, err = e.Complete(ctx, prev.ID, CompleteRequest{Output: json.RawMessage(`1`), ClaimNext: &ClaimNext{Max: 1}})
		wantReason(t, err, cairn.ReasonAlreadyApplied)
	}
	if r := getRun(t, e, id); r.Status != cairn.RunCompleted || r.StepsDone != 3 {
		t.Fatalf("run is %s with %d steps done", r.Status, r.StepsDone)
	}
	for _, max := range []int{0, 101} {
		_, err := e.Complete(ctx, l.ID, CompleteRequest{ClaimNext: &ClaimNext{Max: max}})
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
	ctx := context.Background()
	store := mem.New()
	bus := notifymem.New()
	engines := []*Engine{
		newTestEngine(t, store, Config{Bus: bus, FallbackInterval: 200 * time.Millisecond}),
		newTestEngine(t, store, Config{Bus: bus, FallbackInterval: 200 * time.Millisecond}),
	}
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
	record := func(worker string, l Lease) {
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
			var queue []Lease
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
					ls, err := e.Claim(ctx, ClaimRequest{WorkerID: worker, Max: 2, WaitMs: 100})
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
				req := CompleteRequest{Output: json.RawMessage(`1`)}
				if useEager && !finished {
					req.ClaimNext = &ClaimNext{Max: 1}
				}
				// Like an SDK worker: a transient failure (the commit ran
				// out of time under contention) is retried; a retry that
				// finds its complete applied is told so and claims nothing.
				var res *Ended
				for try := 0; ; try++ {
					var err error
					res, err = e.Complete(ctx, l.ID, req)
					if reason, _ := IsRejection(err); reason == cairn.ReasonAlreadyApplied {
						res, err = &Ended{}, nil
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
