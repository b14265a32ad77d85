package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/notify"
)

// completeEager completes lease id with claim_next max 1 on e and returns
// the lease answered with it (nil when none).
func completeEager(t testing.TB, e *Engine, id string) *cairn.Lease {
	t.Helper()
	ended, err := e.Complete(context.Background(), id, cairn.CompleteRequest{Output: json.RawMessage(`"o"`), ClaimNext: &cairn.ClaimNext{Max: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ended.Leases) == 0 {
		return nil
	}
	return &ended.Leases[0]
}

// leaseObject reports whether attempt n of step has a lease object.
func leaseObject(t testing.TB, h *harness, run, step string, n int) *leaseRecord {
	t.Helper()
	l, _, _, err := h.e.readLeaseAt(h.ctx, run, step, n)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// inlineStart starts a 3-step linear run, claims and completes its first
// step with claim_next: the second step's lease, inline.
func inlineStart(t *testing.T, h *harness) (run string, l cairn.Lease) {
	t.Helper()
	register(t, h.e, "w", linear("lin", "1", 3))
	run = h.start("lin", `{"n":1}`)
	first := h.claim("w")
	next := completeEager(t, h.e, first.ID)
	if next == nil || next.Step != "sb" || next.Attempt != 1 {
		t.Fatalf("complete with claim_next answered %+v; want step sb attempt 1", next)
	}
	if obj := leaseObject(t, h, run, "sb", 1); obj != nil {
		t.Fatalf("the eager lease wrote an object: %+v", obj)
	}
	return run, *next
}

// TestInlineLeaseOneWritePerStep: a complete with claim_next on a linear
// run costs one conditional write (the run record's swap): the next
// step's lease rides in it. The lease works as a lease object does: the
// run view shows its holder, its input is readable, and its complete
// does the same again.
func TestInlineLeaseOneWritePerStep(t *testing.T) {
	h := newHarness(t, counted())
	register(t, h.e, "w", linear("lin", "1", 4))
	run := h.start("lin", `{"n":1}`)
	l := h.claim("w")
	next := completeEager(t, h.e, l.ID) // s1: its commit arms the routine timer
	for i := 2; i < 4; i++ {
		h.e.Settle()
		h.counts.Reset()
		got := completeEager(t, h.e, next.ID)
		s := h.counts.Snapshot()
		if got == nil || got.Step != stepName(i) {
			t.Fatalf("step %d: answered %+v", i, got)
		}
		if s.PutClass() != 1 || s.Swap != 1 || s.Get+s.Stat != 0 {
			t.Fatalf("complete of %s with claim_next: %+v; want exactly one swap and no read", next.Step, s)
		}
		var in map[string]any
		if err := json.Unmarshal(got.Input, &in); err != nil || in["prev"] != "o" {
			t.Fatalf("lease input %s (%v)", got.Input, err)
		}
		v := h.run(run)
		if sv := stepOf(v, got.Step); sv.Holder == nil || sv.Holder.Worker != "w" {
			t.Fatalf("run view of %s: holder %+v", got.Step, sv.Holder)
		}
		iv, err := h.e.StepInput(h.ctx, run, got.Step, 1)
		if err != nil || string(iv.Input) != string(got.Input) || !iv.Kept {
			t.Fatalf("StepInput: %+v, %v; want %s", iv, err, got.Input)
		}
		next = got
	}
	if got := completeEager(t, h.e, next.ID); got != nil {
		t.Fatalf("the last step's complete answered a lease: %+v", got)
	}
	if r := h.run(run); r.Status != cairn.RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
	for i := 1; i < 4; i++ {
		if obj := leaseObject(t, h, run, stepName(i), 1); obj != nil {
			t.Fatalf("step %s has a lease object", stepName(i))
		}
	}
}

// TestInlineLeaseStaleWorkerRefused: a worker whose inline lease lapsed
// and was recovered by the reaper (attempt 2 offered and claimed by
// another worker) is refused everything, and the new holder completes.
func TestInlineLeaseStaleWorkerRefused(t *testing.T) {
	h := newHarness(t)
	run, l := inlineStart(t, h)
	register(t, h.e, "w2", linear("lin", "1", 3))
	h.clk.Advance(h.e.cfg.LeaseTTL + h.e.cfg.RecoveryWindow + time.Second)
	if st := h.reap(); st.LeasesLost != 1 {
		t.Fatalf("reaper: %+v; want one lease lost", st)
	}
	if obj := leaseObject(t, h, run, "sb", 1); obj == nil || obj.State != leaseExpired {
		t.Fatalf("the fence left %+v; want an expired object", obj)
	}
	l2 := h.claim("w2")
	if l2.Step != "sb" || l2.Attempt != 2 {
		t.Fatalf("claimed %+v; want s1 attempt 2", l2)
	}
	_, err := h.e.Complete(h.ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"stale"`)})
	wantReason(t, err, cairn.ReasonFenced)
	_, err = h.e.Heartbeat(h.ctx, l.ID)
	wantReason(t, err, cairn.ReasonFenced)
	_, err = h.e.Fail(h.ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable}})
	wantReason(t, err, cairn.ReasonFenced)
	// A peer, which never cached the lease, refuses it the same way.
	_, err = h.peer().Complete(h.ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"stale"`)})
	wantReason(t, err, cairn.ReasonFenced)
	h.complete(l2.ID, `"fresh"`)
	s := stepOf(h.run(run), "sb")
	if s.Status != cairn.StepCompleted || string(s.Output) != `"fresh"` || s.Attempts[0].Outcome != cairn.OutcomeLost {
		t.Fatalf("s1: %+v", s)
	}
}

// TestInlineLeaseLapsedCallFences: a call about a lapsed inline lease
// before any reaper pass fences it (the object created expired) and
// records the loss, as for a lease object.
func TestInlineLeaseLapsedCallFences(t *testing.T) {
	h := newHarness(t)
	run, l := inlineStart(t, h)
	h.clk.Advance(h.e.cfg.LeaseTTL + h.e.cfg.RecoveryWindow + time.Second)
	_, err := h.peer().Heartbeat(h.ctx, l.ID)
	wantReason(t, err, cairn.ReasonFenced)
	if obj := leaseObject(t, h, run, "sb", 1); obj == nil || obj.State != leaseExpired {
		t.Fatalf("lease object %+v; want expired", obj)
	}
	if s := stepOf(h.run(run), "sb"); s.Attempt != 2 {
		t.Fatalf("s1 attempt %d; want 2", s.Attempt)
	}
	_, err = h.e.Complete(h.ctx, l.ID, cairn.CompleteRequest{})
	wantReason(t, err, cairn.ReasonFenced)
}

// TestInlineLeaseHeartbeats: the first heartbeat creates the lease
// object from the record's lease, the next swaps it (on this instance and
// a peer); the reaper then goes by the object, and a late fence of the
// record's expiry cannot land over it.
func TestInlineLeaseHeartbeats(t *testing.T) {
	h := newHarness(t)
	run, l := inlineStart(t, h)
	h.clk.Advance(h.e.cfg.LeaseTTL / 2)
	if _, err := h.e.Heartbeat(h.ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	obj := leaseObject(t, h, run, "sb", 1)
	if obj == nil || obj.State != leaseActive || !obj.ExpiresAt.After(l.ExpiresAt) || obj.Nonce == "" {
		t.Fatalf("after the first heartbeat: %+v", obj)
	}
	_, ver1, _, _ := h.e.readLeaseAt(h.ctx, run, "sb", 1)
	h.clk.Advance(h.e.cfg.LeaseTTL / 2)
	if _, err := h.e.Heartbeat(h.ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(h.e.cfg.LeaseTTL / 2)
	if _, err := h.peer().Heartbeat(h.ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	_, ver2, _, _ := h.e.readLeaseAt(h.ctx, run, "sb", 1)
	if ver1 == ver2 {
		t.Fatal("later heartbeats did not swap the object")
	}
	// Past the record's lease expiry and recovery window, renewed by the
	// object: nothing is lost.
	h.clk.Advance(h.e.cfg.RecoveryWindow)
	if st := h.reap(); st.LeasesLost != 0 {
		t.Fatalf("reaper recovered a renewed lease: %+v", st)
	}
	// A fence from the record's stale copy must fail: the object exists.
	r, err := h.e.readRun(h.ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	stale := h.e.inlineRecord(r, "sb", r.Steps["sb"].Lease)
	if err := h.e.leases.Fence(h.ctx, stale, inlineVersion, "expired"); err == nil {
		t.Fatal("a fence of the record's lease landed over the object")
	}
	next := completeEager(t, h.e, l.ID)
	if next == nil || next.Step != "sc" {
		t.Fatalf("answered %+v", next)
	}
	if s := stepOf(h.run(run), "sb"); s.Status != cairn.StepCompleted {
		t.Fatalf("s1 %s", s.Status)
	}
}

// TestInlineLeaseHeartbeatRacesFence: a heartbeat and the reaper's fence
// of one inline lease, at the edge of its recovery: exactly one wins, and
// the worker's complete agrees with the winner.
func TestInlineLeaseHeartbeatRacesFence(t *testing.T) {
	for i := range 20 {
		h := newHarness(t)
		run, l := inlineStart(t, h)
		other := h.peer()
		h.clk.Advance(h.e.cfg.LeaseTTL + h.e.cfg.RecoveryWindow - time.Millisecond)
		var wg sync.WaitGroup
		var hbErr error
		wg.Go(func() { _, hbErr = other.Heartbeat(h.ctx, l.ID) })
		wg.Go(func() {
			h.clk.Advance(time.Millisecond)
			if _, err := h.e.Reap(h.ctx); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		_, err := h.e.Complete(h.ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"x"`)})
		s := stepOf(h.run(run), "sb")
		switch {
		case err == nil:
			if s.Status != cairn.StepCompleted || s.Attempt != 1 {
				t.Fatalf("round %d: complete accepted but s1 %+v", i, s)
			}
		default:
			wantReason(t, err, cairn.ReasonFenced)
			if s.Attempt != 2 || s.Status != cairn.StepReady {
				t.Fatalf("round %d: complete fenced but s1 %+v (heartbeat: %v)", i, s, hbErr)
			}
		}
	}
}

// TestInlineLeaseCrashRecoveredOnTime: the worker holding an inline lease
// dies. The reaper, driven by the run's timers alone, recovers the
// attempt as a lost lease (attempt 2, no retry budget) once its expiry
// and the recovery window passed, not before, and within a timer's slack
// after.
func TestInlineLeaseCrashRecoveredOnTime(t *testing.T) {
	h := newHarness(t)
	run, l := inlineStart(t, h)
	due := l.ExpiresAt.Add(h.e.cfg.RecoveryWindow)
	for h.clk.Now().Before(due.Add(5 * time.Second)) {
		h.clk.Advance(250 * time.Millisecond)
		st := h.reap()
		if st.LeasesLost > 0 {
			if h.clk.Now().Before(due) {
				t.Fatalf("recovered at %v, before %v", h.clk.Now(), due)
			}
			if late := h.clk.Now().Sub(due); late > 3*time.Second {
				t.Fatalf("recovered %v late", late)
			}
			s := stepOf(h.run(run), "sb")
			if s.Attempt != 2 || s.Failures != 0 || s.Attempts[0].Outcome != cairn.OutcomeLost || s.Attempts[0].Worker != "w" {
				t.Fatalf("s1 after recovery: %+v", s)
			}
			// The recovered attempt is offered as any other.
			if l2 := h.claim("w"); l2.Step != "sb" || l2.Attempt != 2 {
				t.Fatalf("claimed %+v", l2)
			}
			return
		}
	}
	t.Fatalf("not recovered by %v", h.clk.Now())
}

// TestInlineLeaseTimeoutOnTime: a step with a timeout leased inline
// times out at its timeout_at, its timer armed by the commit.
func TestInlineLeaseTimeoutOnTime(t *testing.T) {
	h := newHarness(t)
	w := linear("lin", "1", 2)
	w.Steps[1].Timeout = cairn.Duration(5 * time.Second)
	w.Steps[1].Retry = &cairn.RetryPolicy{MaxAttempts: 1}
	register(t, h.e, "w", w)
	run := h.start("lin", `{"n":1}`)
	l := completeEager(t, h.e, h.claim("w").ID)
	if l == nil || l.TimeoutAt == nil {
		t.Fatalf("answered %+v", l)
	}
	for h.clk.Now().Before(l.TimeoutAt.Add(4 * time.Second)) {
		h.clk.Advance(250 * time.Millisecond)
		if st := h.reap(); st.TimedOut > 0 {
			if h.clk.Now().Before(*l.TimeoutAt) || h.clk.Now().Sub(*l.TimeoutAt) > 3*time.Second {
				t.Fatalf("timed out at %v; due %v", h.clk.Now(), l.TimeoutAt)
			}
			if r := h.run(run); r.Status != cairn.RunFailed {
				t.Fatalf("run %s", r.Status)
			}
			return
		}
	}
	t.Fatal("the attempt never timed out")
}

// TestInlineLeaseFailAndInterrupt: fail and interrupt of an inline lease
// apply as for a lease object; the retry is claimed through a lease
// object by anyone.
func TestInlineLeaseFailAndInterrupt(t *testing.T) {
	t.Run("fail", func(t *testing.T) {
		h := newHarness(t)
		run, l := inlineStart(t, h)
		if _, err := h.peer().Fail(h.ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable, Message: "again"}}); err != nil {
			t.Fatal(err)
		}
		_, err := h.e.Fail(h.ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable}})
		wantReason(t, err, cairn.ReasonAlreadyApplied)
		h.clk.Advance(time.Minute) // the backoff
		h.reap()
		l2 := h.claim("w")
		if l2.Step != "sb" || l2.Attempt != 2 || leaseObject(t, h, run, "sb", 2) == nil {
			t.Fatalf("retry claimed %+v", l2)
		}
		s := stepOf(h.run(run), "sb")
		if s.Failures != 1 || s.Attempts[0].Outcome != cairn.OutcomeFailed {
			t.Fatalf("s1: %+v", s)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		h := newHarness(t)
		run, l := inlineStart(t, h)
		if _, err := h.e.Interrupt(h.ctx, l.ID, cairn.InterruptRequest{Payload: json.RawMessage(`{"q":1}`)}); err != nil {
			t.Fatal(err)
		}
		_, err := h.e.Heartbeat(h.ctx, l.ID)
		wantReason(t, err, cairn.ReasonFenced)
		if _, err := h.e.ResumeStep(h.ctx, run, "sb", json.RawMessage(`true`), "test"); err != nil {
			t.Fatal(err)
		}
		l2 := h.claim("w")
		if l2.Step != "sb" || l2.Attempt != 2 || !l2.Resumed {
			t.Fatalf("resumed claim %+v", l2)
		}
		_, err = h.e.Complete(h.ctx, l.ID, cairn.CompleteRequest{})
		wantReason(t, err, cairn.ReasonFenced)
	})
}

// TestInlineLeaseNeverClaimed: hints for an inline-leased attempt (a
// stray one, a resumed run's) reach claims on this instance and on a
// peer, whose copies of the record may be stale: none leases it, and no
// lease object is created.
func TestInlineLeaseNeverClaimed(t *testing.T) {
	h := newHarness(t)
	run, l := inlineStart(t, h)
	register(t, h.e, "thief", linear("lin", "1", 3))
	peer := h.peer()
	for _, e := range []*Engine{h.e, peer} {
		e.receive(notify.Hint{Run: run, Workflow: "lin", Version: "1", Step: "sb", Attempt: 1})
		got, err := e.Claim(h.ctx, cairn.ClaimRequest{WorkerID: "thief", Max: 5})
		if err != nil || len(got) != 0 {
			t.Fatalf("a claim got %+v (%v)", got, err)
		}
		got, err = e.Claim(h.ctx, cairn.ClaimRequest{WorkerID: "thief", Max: 5, Run: run})
		if err != nil || len(got) != 0 {
			t.Fatalf("a run-scoped claim got %+v (%v)", got, err)
		}
	}
	if leaseObject(t, h, run, "sb", 1) != nil {
		t.Fatal("a claimer created the lease object")
	}
	if st := h.reap(); st.Announced != 0 || st.LeasesLost != 0 {
		t.Fatalf("reaper: %+v", st)
	}
	h.complete(l.ID, `"o"`)
}

// TestInlineLeasesUnderConcurrentClaims: two instances, workers that
// complete with claim_next, and thieves that push hints for every ready
// attempt and claim them, all at once: each attempt is handed out at
// most once, and every run completes with each step completed once.
func TestInlineLeasesUnderConcurrentClaims(t *testing.T) {
	h := newHarness(t, wallClock())
	wf := linear("lin", "1", 6)
	register(t, h.e, "w", wf)
	peer := h.peer()
	es := []*Engine{h.e, peer}
	const runs = 12
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = mustStart(t, es[i%2], "lin", `{"n":1}`)
	}
	var mu sync.Mutex
	handed := map[string]string{}
	note := func(who string, ls ...cairn.Lease) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range ls {
			k := fmt.Sprintf("%s/%s/%d", l.Run, l.Step, l.Attempt)
			if prev, ok := handed[k]; ok {
				t.Errorf("attempt %s handed out twice: %s and %s", k, prev, who)
			}
			handed[k] = who
		}
	}
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range 6 {
		e := es[i%2]
		wg.Go(func() {
			var held []cairn.Lease
			for ctx.Err() == nil {
				select {
				case <-done:
					return
				default:
				}
				if len(held) == 0 {
					got, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1, WaitMs: 50})
					if err != nil {
						continue
					}
					note(fmt.Sprintf("claim%d", i), got...)
					held = got
					continue
				}
				l := held[0]
				held = held[1:]
				ended, err := es[(i+1)%2].Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"o"`), ClaimNext: &cairn.ClaimNext{Max: 1}})
				if err != nil {
					if _, ok := IsRejection(err); !ok {
						t.Errorf("complete: %v", err)
					}
					continue
				}
				note(fmt.Sprintf("eager%d", i), ended.Leases...)
				held = append(held, ended.Leases...)
			}
		})
	}
	for i := range 4 {
		e := es[i%2]
		wg.Go(func() {
			for ctx.Err() == nil {
				select {
				case <-done:
					return
				default:
				}
				for _, run := range ids {
					r := e.sharedRun(run, 0)
					if r == nil {
						continue
					}
					for id, st := range r.Steps {
						if st.Status == cairn.StepReady {
							e.receive(notify.Hint{Run: run, Workflow: "lin", Version: "1", Step: id, Attempt: st.Attempt})
						}
					}
				}
				got, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 3})
				if err == nil && len(got) > 0 {
					note(fmt.Sprintf("thief%d", i), got...)
					// The thief completes what it won, as a worker would.
					for _, l := range got {
						_, _ = e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"o"`)})
					}
				}
			}
		})
	}
	diag := awaitCompleted(t, h.e, ids, 90*time.Second)
	close(done)
	cancel()
	wg.Wait()
	if diag != "" {
		t.Fatal(diag)
	}
	for _, run := range ids {
		r := getRun(t, h.e, run)
		for _, s := range r.Steps {
			ok := 0
			for _, a := range s.Attempts {
				if a.Outcome == cairn.OutcomeCompleted {
					ok++
				}
			}
			if s.Status != cairn.StepCompleted || ok != 1 {
				t.Fatalf("run %s step %s: %+v", run, s.ID, s)
			}
		}
	}
	inline := 0
	for k, who := range handed {
		if len(who) > 5 && who[:5] == "eager" {
			inline++
		}
		_ = k
	}
	if inline == 0 {
		t.Fatal("no lease was handed out by a complete")
	}
}

// TestInlineLeaseYieldsToPriority: a complete with claim_next does not
// lease the next step of its run inline when this instance holds more
// urgent work for the worker: the eager claim takes that, as a claim
// would, and the next step is offered as usual.
func TestInlineLeaseYieldsToPriority(t *testing.T) {
	h := newHarness(t)
	register(t, h.e, "w", linear("lin", "1", 3), single("urgent", cairn.Step{}))
	run := h.start("lin", `{"n":1}`)
	first := h.claim("w")
	res, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "urgent", Input: json.RawMessage(`{}`), Priority: 50})
	if err != nil {
		t.Fatal(err)
	}
	next := completeEager(t, h.e, first.ID)
	if next == nil || next.Run != res.Run.ID {
		t.Fatalf("complete with claim_next answered %+v; want the urgent run's step", next)
	}
	if st := h.run(run); stepOf(st, "sb").Holder != nil {
		t.Fatalf("sb is held: %+v", stepOf(st, "sb").Holder)
	}
	if l := h.claim("w"); l.Run != run || l.Step != "sb" || leaseObject(t, h, run, "sb", 1) == nil {
		t.Fatalf("claimed %+v", l)
	}
}
