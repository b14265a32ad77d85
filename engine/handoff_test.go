package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/internal/testutil"
)

// heldClaimAnswer holds a claim of worker on e in the background and
// returns where its answer will come, once the claim is held.
func heldClaimAnswer(t *testing.T, e *Engine, worker string, held int) <-chan []cairn.Lease {
	t.Helper()
	got := make(chan []cairn.Lease, 1)
	go func() {
		ls, err := e.Claim(context.Background(), cairn.ClaimRequest{WorkerID: worker, Max: 4, WaitMs: 20_000})
		if err != nil {
			t.Error(err)
		}
		got <- ls
	}()
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "a claim of "+worker+" held and open to starts", func() (bool, string) {
		n := e.handoff.Len()
		return n >= held, fmt.Sprintf("%d claims open to starts, want %d", n, held)
	})
	return got
}

// TestStartHandsItsFirstAttemptToAHeldClaim: a run started while a claim
// waits on the same instance is answered to that claim by the start
// itself: the run's first record carries the lease, no lease object is
// written and no claim reads the run. The start costs the record and its
// timer; the step's complete, one swap.
func TestStartHandsItsFirstAttemptToAHeldClaim(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", single("one", cairn.Step{})))
	got := heldClaimAnswer(t, h.e, "w", 1)
	h.counts.Reset()
	res, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "one", Version: "1"}) // no @latest read
	if err != nil {
		t.Fatal(err)
	}
	run := res.Run.ID
	var ls []cairn.Lease
	select {
	case ls = <-got:
	case <-time.After(10 * time.Second):
		t.Fatalf("the held claim was not answered within 10 s of the start\n%s", diagnoseRun(t, h.e, run))
	}
	if len(ls) != 1 || ls[0].Run != run || ls[0].Step != "only" || ls[0].Attempt != 1 {
		t.Fatalf("the held claim answered %+v, want the new run's step", ls)
	}
	if s := h.counts.Snapshot(); s.Reads() != 0 || s.Create != 1 || s.Put != 1 || s.Swap != 0 {
		t.Fatalf("start and handoff: %v, want the run's create and its timer only", s)
	}
	if obj := leaseObject(t, h, run, "only", 1); obj != nil {
		t.Fatalf("the handed-off lease wrote an object: %+v", obj)
	}
	h.counts.Reset()
	h.complete(ls[0].ID, `"done"`)
	if s := h.counts.Snapshot(); s.PutClass() != 1 || s.Reads() != 0 {
		t.Fatalf("the complete: %v, want one swap", s)
	}
	if r := getRun(t, h.e, run); r.Status != cairn.RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
}

// TestConcurrentStartsShareAHeldClaim: an SDK worker holds one claim for
// all its free slots; starts that come while it waits share it, each
// leasing its run's first attempt in its own create, and the claim answers
// them all (woken by the first, it waits for the others' writes): no
// lease object, no claim read. Writes take 400 ms, so the four starts
// reserve room while the first is still writing.
func TestConcurrentStartsShareAHeldClaim(t *testing.T) {
	h := newHarness(t, withFaults(faults.Profile{}), withWorkflows("w", single("one", cairn.Step{})))
	got := heldClaimAnswer(t, h.e, "w", 1) // Max 4
	h.faults.SetProfile(faults.Profile{Write: faults.Latency{P50: 400 * time.Millisecond}})
	runs := make([]string, 4)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			res, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "one", Version: "1"})
			if err != nil {
				t.Error(err)
				return
			}
			runs[i] = res.Run.ID
		})
	}
	wg.Wait()
	h.faults.SetProfile(faults.Profile{})
	var ls []cairn.Lease
	select {
	case ls = <-got:
	case <-time.After(10 * time.Second):
		t.Fatalf("the held claim was not answered within 10 s of the starts\n%s", diagnoseRun(t, h.e, runs[0]))
	}
	answered := map[string]bool{}
	for _, l := range ls {
		answered[l.Run] = true
		if obj := leaseObject(t, h, l.Run, "only", 1); obj != nil {
			t.Errorf("the handed-off lease of run %s wrote an object: %+v", l.Run, obj)
		}
	}
	for _, run := range runs {
		if !answered[run] {
			t.Errorf("run %s, started while the claim held room for it, was not in its answer %+v", run, ls)
		}
	}
	for _, l := range ls {
		h.complete(l.ID, `"done"`)
	}
	for _, run := range runs {
		if r := getRun(t, h.e, run); r.Status != cairn.RunCompleted {
			t.Errorf("run %s %s", run, r.Status)
		}
	}
}

// TestHandoffOnlyToAWorkerThatServesTheRun: a held claim of a worker that
// did not register the run's workflow, or lacks the labels its step
// requires, is not handed the run; the claim that may take it is.
func TestHandoffOnlyToAWorkerThatServesTheRun(t *testing.T) {
	labelled := single("one", cairn.Step{RequiresLabels: map[string]string{"gpu": "a100"}})
	h := newHarness(t, withWorkflows("other", single("else", cairn.Step{})))
	register(t, h.e, "plain", labelled)
	other := heldClaimAnswer(t, h.e, "other", 1)
	plain := heldClaimAnswer(t, h.e, "plain", 2)
	run := h.start("one", `{}`)
	select {
	case ls := <-other:
		t.Fatalf("a worker of another workflow was answered %+v", ls)
	case ls := <-plain:
		t.Fatalf("a worker without the step's labels was answered %+v", ls)
	case <-time.After(300 * time.Millisecond):
	}
	if r := getRun(t, h.e, run); r.Steps[0].Status != cairn.StepReady {
		t.Fatalf("the labelled step is %s, want ready for a worker with its labels", r.Steps[0].Status)
	}
	if _, err := h.e.Register(h.ctx, cairn.RegisterRequest{WorkerID: "gpu", Labels: map[string]string{"gpu": "a100"}, Workflows: []cairn.Workflow{labelled}}); err != nil {
		t.Fatal(err)
	}
	// The labelled worker takes the waiting run by its hint, then is
	// handed the next one by its start.
	if ls, err := h.e.Claim(h.ctx, cairn.ClaimRequest{WorkerID: "gpu", Max: 1, WaitMs: 10_000}); err != nil || len(ls) != 1 || ls[0].Run != run {
		t.Fatalf("the worker with the step's labels claimed %+v, %v; want run %s", ls, err, run)
	}
	gpu := heldClaimAnswer(t, h.e, "gpu", 3)
	second := h.start("one", `{}`)
	select {
	case ls := <-gpu:
		if len(ls) != 1 || ls[0].Run != second {
			t.Fatalf("the labelled worker was answered %+v, want run %s", ls, second)
		}
	case ls := <-plain:
		t.Fatalf("a worker without the step's labels was answered %+v", ls)
	case <-time.After(10 * time.Second):
		t.Fatal("the worker with the step's labels was not answered within 10 s")
	}
}

// TestFailedStartReleasesTheHeldClaim: a start whose record the store
// refuses hands nothing to the claim it reserved; the claim goes on
// waiting and takes the next run.
func TestFailedStartReleasesTheHeldClaim(t *testing.T) {
	h := newHarness(t, withFaults(faults.Profile{}), withWorkflows("w", single("one", cairn.Step{})))
	got := heldClaimAnswer(t, h.e, "w", 1)
	h.faults.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: h.e.keys.RunsPrefix(), Err: errors.New("refused"), Times: 1})
	if _, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "one"}); err == nil {
		t.Fatal("a start succeeded through a refused create")
	}
	select {
	case ls := <-got:
		t.Fatalf("the held claim answered %+v after a start that wrote nothing", ls)
	case <-time.After(200 * time.Millisecond):
	}
	if n := h.e.HeldClaims(); n != 1 {
		t.Fatalf("%d claims held after the failed start, want the one still waiting", n)
	}
	run := h.start("one", `{}`)
	select {
	case ls := <-got:
		if len(ls) != 1 || ls[0].Run != run {
			t.Fatalf("the released claim answered %+v, want run %s", ls, run)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the released claim was not answered within 10 s of the next start")
	}
}

// TestHandoffRaces: starts race held claims that come and go (holds of
// 0–30 ms, so some end while a start has reserved them) and completes
// with claim_next: every run completes well within its lease period (no
// lease was handed to a claim that had answered and recovered only at
// expiry), and no attempt is leased twice.
func TestHandoffRaces(t *testing.T) {
	// Writes of 1–5 ms, so claims end while a start's create is in flight.
	h := newHarness(t, wallClock(), withFaults(faults.S3.Scaled(0.03)), withConfig(Config{LeaseTTL: time.Minute}), withWorkflows("w", single("one", cairn.Step{}), linear("lin", "1", 3)))
	e := h.e
	ctx, stop := context.WithCancel(h.ctx)
	var mu sync.Mutex
	leased := map[string]int{}
	var workers sync.WaitGroup
	for range 6 {
		workers.Go(func() {
			var next []cairn.Lease
			for ctx.Err() == nil {
				ls := next
				next = nil
				if len(ls) == 0 {
					var err error
					ls, err = e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1 + rand.IntN(2), WaitMs: int64(rand.IntN(30))})
					if err != nil {
						continue
					}
				}
				for _, l := range ls {
					mu.Lock()
					leased[fmt.Sprintf("%s/%s/%d", l.Run, l.Step, l.Attempt)]++
					mu.Unlock()
					req := cairn.CompleteRequest{Output: json.RawMessage(`1`)}
					if rand.IntN(2) == 0 && len(ls) == 1 {
						req.ClaimNext = &cairn.ClaimNext{Max: 1}
					}
					if ended, err := e.Complete(ctx, l.ID, req); err == nil && ended != nil {
						next = append(next, ended.Leases...)
					}
				}
			}
		})
	}
	var runs []string
	var starters sync.WaitGroup
	var runsMu sync.Mutex
	for range 4 {
		starters.Go(func() {
			for i := range 25 {
				wf := "one"
				if i%2 == 0 {
					wf = "lin"
				}
				res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: wf, Input: json.RawMessage(`{"n":1}`)})
				if err != nil {
					t.Error(err)
					return
				}
				runsMu.Lock()
				runs = append(runs, res.Run.ID)
				runsMu.Unlock()
			}
		})
	}
	starters.Wait()
	diag := awaitCompleted(t, e, runs, 30*time.Second)
	stop()
	workers.Wait()
	if diag != "" {
		t.Fatalf("runs not completed within 30 s (a lease period is a minute):\n%s", diag)
	}
	for k, n := range leased {
		if n > 1 {
			t.Errorf("attempt %s leased %d times", k, n)
		}
	}
	if e.handedOff.Load() == 0 {
		t.Fatal("no start handed its attempts to a held claim: the test raced nothing")
	}
	t.Logf("%d runs, %d attempts leased once each, %d of them handed over by their run's start", len(runs), len(leased), e.handedOff.Load())
}
