package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// Every 409 reason, provoked by the sequence that produces it in life.

func TestAlreadyAppliedAfterLostAnswer(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newTestEngine(t, open(t), Config{})
			register(t, e, "w", linear("lin", "1", 2))
			run := mustStart(t, e, "lin", `{"n":1}`)
			l := claimOne(t, e, "w")
			if _, err := e.Started(ctx, l.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`"a"`)}); err != nil {
				t.Fatal(err)
			}
			// The answer was lost; the worker sends complete again, and
			// fail too: both are already_applied, and nothing changes.
			_, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`"different"`)})
			wantReason(t, err, cairn.ReasonAlreadyApplied)
			_, err = e.Fail(ctx, l.ID, FailRequest{Error: cairn.ErrorInfo{Class: "retryable", Message: "x"}})
			wantReason(t, err, cairn.ReasonAlreadyApplied)
			// A fresh instance (no cache) answers the same.
			e2 := newTestEngine(t, e.Store(), Config{})
			_, err = e2.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`"a"`)})
			wantReason(t, err, cairn.ReasonAlreadyApplied)
			r := getRun(t, e, run)
			if s := stepOf(r, "sa"); string(s.Output) != `"a"` || s.Status != cairn.StepCompleted {
				t.Fatalf("step sa = %s %s", s.Status, s.Output)
			}
			if n := countJournal(t, e, run, "step_completed", "sa"); n != 1 {
				t.Fatalf("%d step_completed entries for sa, want 1", n)
			}
		})
	}
}

func TestFencedAfterPausePastExpiry(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := newClock()
			e := newTestEngine(t, open(t), Config{Now: clk.Now, LeaseTTL: 10 * time.Second, AnnounceAfter: time.Millisecond})
			register(t, e, "w1", single("one", cairn.Step{}))
			register(t, e, "w2", single("one", cairn.Step{}))
			run := mustStart(t, e, "one", `{}`)
			l1 := claimOne(t, e, "w1")
			if _, err := e.Started(ctx, l1.ID); err != nil {
				t.Fatal(err)
			}
			// w1 pauses (GC, laptop lid): no heartbeats past expiry and
			// the recovery window. The reaper reclaims the attempt.
			clk.Advance(10*time.Second + 5*time.Second + time.Millisecond)
			st, err := e.Reap(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.LeasesLost != 1 {
				t.Fatalf("reaper stats %+v, want one lost lease", st)
			}
			l2 := claimOne(t, e, "w2")
			if l2.Attempt != 2 || l2.Step != l1.Step {
				t.Fatalf("second lease is attempt %d of %s, want attempt 2 of %s", l2.Attempt, l2.Step, l1.Step)
			}
			// w1 wakes up: every call about its lease is fenced, none applied.
			_, err = e.Heartbeat(ctx, l1.ID)
			wantReason(t, err, cairn.ReasonFenced)
			_, err = e.Complete(ctx, l1.ID, CompleteRequest{Output: json.RawMessage(`"stale"`)})
			wantReason(t, err, cairn.ReasonFenced)
			_, err = e.Started(ctx, l1.ID)
			wantReason(t, err, cairn.ReasonFenced)
			if _, err := e.Complete(ctx, l2.ID, CompleteRequest{Output: json.RawMessage(`"fresh"`)}); err != nil {
				t.Fatal(err)
			}
			r := getRun(t, e, run)
			if r.Status != cairn.RunCompleted || string(r.Output) != `"fresh"` {
				t.Fatalf("run %s output %s, want completed with the second attempt's output", r.Status, r.Output)
			}
			// The journal names both attempts and who held each.
			s := stepOf(r, "only")
			if len(s.Attempts) != 2 || s.Attempts[0].Worker != "w1" || s.Attempts[0].Outcome != "lost" || s.Attempts[1].Worker != "w2" || s.Attempts[1].Outcome != "completed" {
				t.Fatalf("attempts = %+v", s.Attempts)
			}
		})
	}
}

func TestRunTerminalAfterCancel(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newTestEngine(t, open(t), Config{})
			register(t, e, "w", linear("lin", "1", 2))
			run := mustStart(t, e, "lin", `{"n":1}`)
			l := claimOne(t, e, "w")
			if _, err := e.Started(ctx, l.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.CancelRun(ctx, run, "operator"); err != nil {
				t.Fatal(err)
			}
			_, err := e.Heartbeat(ctx, l.ID)
			wantReason(t, err, cairn.ReasonRunTerminal)
			_, err = e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`)})
			wantReason(t, err, cairn.ReasonRunTerminal)
			// A claim scoped to the ended run is told so too.
			_, err = e.Claim(ctx, ClaimRequest{WorkerID: "w", Run: run, WaitMs: 100})
			wantReason(t, err, cairn.ReasonRunTerminal)
			r := getRun(t, e, run)
			if r.Status != cairn.RunCancelled || stepOf(r, "sa").Status != cairn.StepCancelled || stepOf(r, "sb").Status != cairn.StepCancelled {
				t.Fatalf("run %s, steps %s %s", r.Status, stepOf(r, "sa").Status, stepOf(r, "sb").Status)
			}
			if _, err := e.CancelRun(ctx, run, ""); err == nil {
				t.Fatal("cancelling an ended run succeeded")
			}
		})
	}
}

func TestNotStartedForHandWrittenAtMostOnce(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newTestEngine(t, open(t), Config{})
			register(t, e, "w", single("pay", cairn.Step{Delivery: cairn.AtMostOnce}))
			run := mustStart(t, e, "pay", `{"amount": 5}`)
			l := claimOne(t, e, "w")
			if l.Delivery != cairn.AtMostOnce {
				t.Fatalf("lease delivery %s", l.Delivery)
			}
			// A hand-written worker skips started.
			_, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`"paid"`)})
			wantReason(t, err, cairn.ReasonNotStarted)
			_, err = e.Fail(ctx, l.ID, FailRequest{Error: cairn.ErrorInfo{Class: "fatal", Message: "x"}})
			wantReason(t, err, cairn.ReasonNotStarted)
			if r := getRun(t, e, run); r.Status != cairn.RunRunning {
				t.Fatalf("run %s after refused calls", r.Status)
			}
			// Done properly, it completes.
			if _, err := e.Started(ctx, l.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`"paid"`)}); err != nil {
				t.Fatal(err)
			}
			if r := getRun(t, e, run); r.Status != cairn.RunCompleted {
				t.Fatalf("run %s", r.Status)
			}
		})
	}
}

func TestAtMostOnceLostAfterStartFailsNotRerun(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	e := newTestEngine(t, nil, Config{Now: clk.Now, LeaseTTL: 10 * time.Second})
	register(t, e, "w", single("pay", cairn.Step{Delivery: cairn.AtMostOnce}))
	run := mustStart(t, e, "pay", `{}`)
	l := claimOne(t, e, "w")
	if _, err := e.Started(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := e.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	r := getRun(t, e, run)
	if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassLost {
		t.Fatalf("run %s error %+v, want failed with class lost", r.Status, r.Error)
	}
	// An at_most_once lease lost before it started is offered again.
	run2 := mustStart(t, e, "pay", `{}`)
	l2 := claimOne(t, e, "w")
	clk.Advance(time.Minute)
	if _, err := e.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	l3 := claimOne(t, e, "w")
	if l3.Run != run2 || l3.Attempt != l2.Attempt+1 {
		t.Fatalf("re-offer: got attempt %d of run %s", l3.Attempt, l3.Run)
	}
}
