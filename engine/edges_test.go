package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/engine/internal/catalog"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/internal/testutil"
)

// Tests of the edges: what the engine promises when a worker lies, is
// late, or its time runs out. See docs/ARCHITECTURE.md, "Invariants".

// editToken decodes a lease id, lets edit change it, and encodes it again.
func editToken(t *testing.T, id string, edit func(m map[string]any)) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestLeaseIDsAreProven: nothing in a lease id is believed that the lease
// object does not confirm; a forged id changes nothing and answers 404.
func TestLeaseIDsAreProven(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		short := cairn.Workflow{Name: "short", Version: "1", Steps: []cairn.Step{{ID: "a"}}}
		long := cairn.Workflow{Name: "long", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "extra", After: []string{"a"}}}}
		once := cairn.Workflow{Name: "once", Version: "1", Steps: []cairn.Step{{ID: "pay", Delivery: cairn.AtMostOnce}}}
		register(t, e, "w", short, long, once)
		run := mustStart(t, e, "short", `{}`)
		l := claimOne(t, e, "w")

		forged := map[string]string{
			"other nonce":   editToken(t, l.ID, func(m map[string]any) { m["k"] = "AAAAAAAAAAAAAAAAAAAAAA" }),
			"other worker":  editToken(t, l.ID, func(m map[string]any) { m["w"] = "nobody" }),
			"other claim":   editToken(t, l.ID, func(m map[string]any) { m["t"] = m["t"].(float64) + 1 }),
			"next attempt":  editToken(t, l.ID, func(m map[string]any) { m["n"] = 2 }),
			"other step":    editToken(t, l.ID, func(m map[string]any) { m["s"] = "extra" }),
			"workflow hint": editToken(t, l.ID, func(m map[string]any) { m["f"] = "long"; m["v"] = "1" }),
		}
		for what, id := range forged {
			if what == "workflow hint" {
				// Extra fields are ignored: the id still names the real
				// lease; what it says of the workflow is never read.
				continue
			}
			for call, do := range map[string]func() error{
				"complete": func() error { _, err := e.Complete(ctx, id, cairn.CompleteRequest{}); return err },
				"fail": func() error {
					_, err := e.Fail(ctx, id, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "fatal"}})
					return err
				},
				"heartbeat": func() error { _, err := e.Heartbeat(ctx, id); return err },
				"started":   func() error { _, err := e.Started(ctx, id); return err },
			} {
				err := do()
				if !isNotFoundAPI(err) {
					t.Fatalf("%s with %s: got %v, want lease not found", call, what, err)
				}
			}
		}
		// An id for an attempt nobody claimed.
		run2 := mustStart(t, e, "short", `{}`)
		madeUp := leaseToken{Run: run2, Step: "a", Attempt: 1, Worker: "nobody", ClaimedAt: time.Now().UnixMilli(), Nonce: keys.NewNonce()}.ID()
		if _, err := e.Complete(ctx, madeUp, cairn.CompleteRequest{}); !isNotFoundAPI(err) {
			t.Fatalf("complete of an unclaimed attempt: %v", err)
		}
		if s := stepOf(getRun(t, e, run2), "a"); s.Status != cairn.StepReady {
			t.Fatalf("made-up id changed the step: %s", s.Status)
		}
		// Garbage ids are invalid, not a crash.
		for _, id := range []string{"", "x", "..", strings.Repeat("A", 5000), base64.RawURLEncoding.EncodeToString([]byte(`{"r":"../x","s":"a","n":1,"w":"w","t":1,"k":"AAAAAAAAAAAAAAAAAAAAAA"}`))} {
			_, err := e.Complete(ctx, id, cairn.CompleteRequest{})
			var inv *InvalidError
			if !errors.As(err, &inv) && !isNotFoundAPI(err) {
				t.Fatalf("complete(%.20q): %v", id, err)
			}
		}
		// The real id still works, and its workflow edit changed nothing:
		// the run completes as the short workflow it is.
		if _, err := e.Complete(ctx, forged["workflow hint"], cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		if r := getRun(t, e, run); r.Status != cairn.RunCompleted {
			t.Fatalf("run %s", r.Status)
		}

		// at_most_once: the delivery comes from the lease, so no id edit
		// completes it without started.
		onceRun := mustStart(t, e, "once", `{}`)
		los, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Run: onceRun, WaitMs: 1000})
		if err != nil || len(los) != 1 {
			t.Fatalf("claim: %v %v", los, err)
		}
		lo := los[0]
		edited := editToken(t, lo.ID, func(m map[string]any) { m["f"] = "short"; m["v"] = "1" })
		_, err = e.Complete(ctx, edited, cairn.CompleteRequest{})
		wantReason(t, err, cairn.ReasonNotStarted)
	}, wallClock())
}

// TestMutationPanicDoesNotKill: a panic inside a run mutation fails that
// request only; the others of its batch commit and the engine goes on.
func TestMutationPanicDoesNotKill(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("p", cairn.Step{})))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "p", `{}`)
	res := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (any, error) {
				if i == 1 {
					r.State = map[string]json.RawMessage{"half": json.RawMessage(`1`)}
					var m map[string]int
					m["boom"]++ // nil map write: panics
				}
				r.State = map[string]json.RawMessage{}
				if r.State == nil {
					return nil, nil
				}
				r.Correlation += "x"
				return nil, nil
			})
			res <- err
		}()
	}
	var internal int
	for range 3 {
		var ie *InternalError
		if err := <-res; errors.As(err, &ie) {
			internal++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if internal != 1 {
		t.Fatalf("%d internal errors, want 1", internal)
	}
	r, err := e.readRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if r.Correlation != "xx" || r.State["half"] != nil {
		t.Fatalf("after a panicking mutation: correlation %q, state %v", r.Correlation, r.State)
	}
	// And the engine still works.
	l := claimOne(t, e, "w")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
}

// TestLateCompleteAfterFence: a complete that lands after the reaper fenced
// the lease but before it wrote the run record is not applied once the
// worker was told "fenced": the refusal settles the outcome first.
func TestLateCompleteAfterFence(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, clk, e := h.ctx, h.clk, h.e
		run := mustStart(t, e, "f", `{}`)
		l := claimOne(t, e, "w")
		clk.Advance(time.Minute)
		// The reaper's first write, and a crash before its second.
		tok, lr, ver, err := e.lease(ctx, mustToken(t, l.ID))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.leases.Fence(ctx, lr, ver, "expired"); err != nil {
			t.Fatal(err)
		}
		_, err = e.Heartbeat(ctx, l.ID)
		wantReason(t, err, cairn.ReasonFenced)
		_, err = e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"late"`)})
		wantReason(t, err, cairn.ReasonFenced)
		s := stepOf(getRun(t, e, run), "only")
		if s.Status != cairn.StepReady || s.Attempt != 2 || s.Attempts[0].Outcome != "lost" {
			t.Fatalf("after fence: %+v", s)
		}
		// The reaper's pass finds it decided.
		if st, err := e.Reap(ctx); err != nil || st.LeasesLost != 0 {
			t.Fatalf("reap %+v %v", st, err)
		}
		_ = tok
	}, withWorkflows("w", single("f", cairn.Step{})))
}

// TestAlreadyAppliedMeansOwnOutcome: already_applied only ever answers the
// lease whose own complete or fail landed.
func TestAlreadyAppliedMeansOwnOutcome(t *testing.T) {
	h := newHarness(t, withWorkflows("w", single("a", cairn.Step{})))
	ctx, clk, e := h.ctx, h.clk, h.e
	mustStart(t, e, "a", `{}`)
	l := claimOne(t, e, "w")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{})
	wantReason(t, err, cairn.ReasonAlreadyApplied)
	// Lost by expiry: the late complete is fenced, never already_applied.
	mustStart(t, e, "a", `{}`)
	l2 := claimOne(t, e, "w")
	clk.Advance(time.Minute)
	if st, _ := e.Reap(ctx); st.LeasesLost != 1 {
		t.Fatalf("reap %+v", st)
	}
	_, err = e.Complete(ctx, l2.ID, cairn.CompleteRequest{})
	wantReason(t, err, cairn.ReasonFenced)
	_, err = e.Fail(ctx, l2.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "x"}})
	wantReason(t, err, cairn.ReasonFenced)
}

// TestAtMostOnceNeverAgainAfterStarted: once started is durable for an
// at_most_once attempt, no end offers the step again, unless the policy
// lists the class in retry_after_start.
func TestAtMostOnceNeverAgainAfterStarted(t *testing.T) {
	ctx := context.Background()
	for _, class := range []string{cairn.ClassRetryable, cairn.ClassPanic, cairn.ClassInterrupted, "rate_limited", cairn.ClassUnservable, cairn.ClassTimeout} {
		t.Run(class, func(t *testing.T) {
			h := newHarness(t, withWorkflows("w", single("pay", cairn.Step{Delivery: cairn.AtMostOnce, Timeout: cairn.Duration(10 * time.Second)})))
			clk, e := h.clk, h.e
			run := mustStart(t, e, "pay", `{}`)
			l := claimOne(t, e, "w")
			if _, err := e.Started(ctx, l.ID); err != nil {
				t.Fatal(err)
			}
			if class == cairn.ClassTimeout {
				clk.Advance(11 * time.Second)
				if st, _ := e.Reap(ctx); st.TimedOut != 1 {
					t.Fatalf("reap %+v", st)
				}
			} else if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: class, Message: "m"}}); err != nil {
				t.Fatal(err)
			}
			r := getRun(t, e, run)
			s := stepOf(r, "only")
			if r.Status != cairn.RunFailed || s.Status != cairn.StepFailed || s.Attempt != 1 || r.Error.Class != class {
				t.Fatalf("run %s, step %s attempt %d, error %+v: a started at_most_once step was offered again", r.Status, s.Status, s.Attempt, r.Error)
			}
		})
	}
	t.Run("opt-in", func(t *testing.T) {
		e := newTestEngine(t, nil, Config{})
		register(t, e, "w", single("pay", cairn.Step{Delivery: cairn.AtMostOnce,
			Retry: &cairn.RetryPolicy{RetryAfterStart: []string{"declined_before_charge"}, InitialBackoff: cairn.Duration(time.Millisecond)}}))
		run := mustStart(t, e, "pay", `{}`)
		l := claimOne(t, e, "w")
		if _, err := e.Started(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "declined_before_charge"}}); err != nil {
			t.Fatal(err)
		}
		if s := stepOf(getRun(t, e, run), "only"); s.Status != cairn.StepReady || s.Attempt != 2 {
			t.Fatalf("opted-in class not retried: %+v", s)
		}
	})
	t.Run("not started", func(t *testing.T) {
		h := newHarness(t, withWorkflows("w", single("pay", cairn.Step{Delivery: cairn.AtMostOnce, Timeout: cairn.Duration(10 * time.Second)})))
		clk, e := h.clk, h.e
		run := mustStart(t, e, "pay", `{}`)
		claimOne(t, e, "w")
		clk.Advance(11 * time.Second)
		e.Reap(ctx)
		if s := stepOf(getRun(t, e, run), "only"); s.Status != cairn.StepReady || s.Attempt != 2 {
			t.Fatalf("an at_most_once attempt that never started is retried after a timeout: %+v", s)
		}
	})
}

// TestRunScopedClaimServesOnlyRegistered: a run-scoped claim offers only
// steps of workflows and versions the worker registered.
func TestRunScopedClaimServesOnlyRegistered(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("v1", single("s", cairn.Step{})))
	ctx, e := h.ctx, h.e
	v2 := single("s", cairn.Step{})
	v2.Version = "2"
	register(t, e, "v2only", v2)
	register(t, e, "other", single("o", cairn.Step{}))
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "s", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"v2only", "other"} {
		ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: w, Run: res.Run.ID, WaitMs: 50})
		if err != nil || len(ls) != 0 {
			t.Fatalf("worker %s got %d leases of a v1 run (%v)", w, len(ls), err)
		}
	}
	ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "v1", Run: res.Run.ID, WaitMs: 1000})
	if err != nil || len(ls) != 1 {
		t.Fatalf("the v1 worker got %d leases (%v)", len(ls), err)
	}
}

// TestClaimWokenWhenBackoffEnds: a claim sent during a retry's backoff is
// woken when the backoff ends, not at the next fallback scan.
func TestClaimWokenWhenBackoffEnds(t *testing.T) {
	h := newHarness(t, withConfig(Config{FallbackInterval: time.Minute}), wallClock(), withWorkflows("w", single("b", cairn.Step{Retry: &cairn.RetryPolicy{InitialBackoff: cairn.Duration(300 * time.Millisecond)}})))
	ctx, e := h.ctx, h.e
	mustStart(t, e, "b", `{}`)
	l := claimOne(t, e, "w")
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable}}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 10_000})
	took := time.Since(begin)
	if err != nil || len(ls) != 1 || ls[0].Attempt != 2 {
		t.Fatalf("claim after the backoff: %v %v", ls, err)
	}
	if took > 2*time.Second {
		t.Fatalf("claim woken %v after a 300 ms backoff", took)
	}
	t.Logf("claim woken after %v (backoff 300 ms ±20%%)", took.Round(time.Millisecond))
}

// TestTooLarge: a complete that would grow the run record past its limit
// is refused with too_large naming the limit; nothing is applied, the
// lease stays live, and failing it with output_too_large fails the step.
func TestTooLarge(t *testing.T) {
	ctx := context.Background()
	// Every value inline (PayloadInlineMax < 0): the record's own limit
	// is what this test is about; by reference, these outputs would fit.
	e := newTestEngine(t, nil, Config{MaxRunRecordBytes: 64 << 10, PayloadInlineMax: -1})
	register(t, e, "w", linear("big", "1", 3))
	run := mustStart(t, e, "big", `{"n":1}`)
	big := json.RawMessage(`"` + strings.Repeat("x", 40<<10) + `"`)
	l := claimOne(t, e, "w")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: big}); err != nil {
		t.Fatal(err)
	}
	l = claimOne(t, e, "w")
	_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: big})
	wantReason(t, err, cairn.ReasonTooLarge)
	if !strings.Contains(err.Error(), "65536-byte limit") {
		t.Fatalf("the refusal does not name the limit: %v", err)
	}
	if _, err := e.Heartbeat(ctx, l.ID); err != nil {
		t.Fatalf("lease not live after too_large: %v", err)
	}
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassOutputTooLarge, Message: "m"}}); err != nil {
		t.Fatal(err)
	}
	if r := getRun(t, e, run); r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassOutputTooLarge || stepOf(r, stepName(1)).Attempt != 1 {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
}

// TestHeartbeatManyHidesStoreErrors: a batched heartbeat never returns
// store error text or keys.
func TestHeartbeatManyHidesStoreErrors(t *testing.T) {
	h := newHarness(t, withFaults(faults.Profile{}), wallClock(), withWorkflows("w", single("h", cairn.Step{})))
	ctx, e, fs := h.ctx, h.e, h.faults
	mustStart(t, e, "h", `{}`)
	l := claimOne(t, e, "w")
	// As on an instance that did not make the lease: it reads the lease.
	e.leases.Forget(l.Run, l.Step, l.Attempt)
	fs.Inject(faults.Rule{Ops: []faults.Op{faults.OpGet}, KeyPrefix: "leases/", Err: errors.New("s3: AccessDenied on leases/secret/key")})
	out := e.HeartbeatMany(ctx, []string{l.ID})
	if out[0].Error == "" || strings.Contains(out[0].Error, "leases/") || strings.Contains(out[0].Error, "AccessDenied") {
		t.Fatalf("batched heartbeat error %q", out[0].Error)
	}
}

// BenchmarkHeartbeatMany renews 1 and 100 leases in one batched heartbeat
// on the S3 latency profile; the 100-lease batch should take at most about
// twice the single one (they renew concurrently).
func BenchmarkHeartbeatMany(b *testing.B) {
	h := newHarness(b, withFaults(faults.S3), wallClock(), withWorkflows("w", fanOut("hb", 100)))
	ctx, e := h.ctx, h.e
	mustStart(b, e, "hb", `{}`)
	var ids []string
	for len(ids) < 100 {
		ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 100, WaitMs: 2000})
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range ls {
			ids = append(ids, l.ID)
		}
	}
	for _, n := range []int{1, 100} {
		b.Run(map[int]string{1: "leases=1", 100: "leases=100"}[n], func(b *testing.B) {
			for b.Loop() {
				for _, r := range e.HeartbeatMany(ctx, ids[:n]) {
					if r.ExpiresAt == nil {
						b.Fatalf("%+v", r)
					}
				}
			}
		})
	}
}

var _ = blob.ErrNotFound

// TestUnservableAtMostOnceNeedsNoStarted: a worker without the step's
// handler fails it as unservable without ever starting it; the step goes
// back to the queue for another worker.
func TestUnservableAtMostOnceNeedsNoStarted(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("u", cairn.Step{Delivery: cairn.AtMostOnce})))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "u", `{}`)
	l := claimOne(t, e, "w")
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassUnservable}}); err != nil {
		t.Fatal(err)
	}
	if s := stepOf(getRun(t, e, run), "only"); s.Status != cairn.StepReady || s.Attempt != 2 {
		t.Fatalf("after unservable: %+v", s)
	}
	// Any other class still needs started.
	register(t, e, "w2", single("u", cairn.Step{Delivery: cairn.AtMostOnce}))
	l2 := claimOne(t, e, "w2")
	_, err := e.Fail(ctx, l2.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable}})
	wantReason(t, err, cairn.ReasonNotStarted)
}

// TestClaimBacksOffWhileTheStoreFails: a waiting claim whose reads fail
// backs off instead of re-reading in a tight loop, and the outage is
// logged once when it starts and once when it ends, not per request.
func TestClaimBacksOffWhileTheStoreFails(t *testing.T) {
	var logs testutil.SyncBuffer
	h := newHarness(t, withFaults(faults.Profile{}), withConfig(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), FallbackInterval: time.Minute}), wallClock(), withWorkflows("w", single("o", cairn.Step{})))
	ctx, e, fs := h.ctx, h.e, h.faults
	run := mustStart(t, e, "o", `{}`)
	// As on an instance that did not start the run: the claim reads it.
	e.commits.Cache().Drop(run)
	fs.Inject(faults.Rule{Ops: []faults.Op{faults.OpGet}, KeyPrefix: "runs/", Err: errors.New("connection refused")})
	before := fs.Stats()
	ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 1500})
	if err != nil || len(ls) != 0 {
		t.Fatalf("claim during the outage: %v %v", ls, err)
	}
	reads := fs.Stats().Injected - before.Injected
	if reads > 20 {
		t.Fatalf("%d run reads in a 1.5 s claim while the store failed: no backoff", reads)
	}
	t.Logf("%d failing reads in a 1.5 s claim", reads)
	fs.Clear()
	l := claimOne(t, e, "w")
	if l.Run != run {
		t.Fatalf("claimed %s", l.Run)
	}
	out := logs.String()
	if n := strings.Count(out, "the store is failing"); n != 1 {
		t.Fatalf("%d outage warnings, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "the store answers again") {
		t.Fatalf("recovery not logged:\n%s", out)
	}
}

// TestLateFailIsTheTimeout: a fail that arrives just past timeout_at (a
// body that gave up at its deadline) is applied as class timeout with the
// worker's message; a complete that late is refused.
func TestLateFailIsTheTimeout(t *testing.T) {
	h := newHarness(t, withWorkflows("w", single("lf", cairn.Step{Timeout: cairn.Duration(time.Second), Retry: &cairn.RetryPolicy{MaxAttempts: 1}})))
	ctx, clk, e := h.ctx, h.clk, h.e
	run := mustStart(t, e, "lf", `{}`)
	l := claimOne(t, e, "w")
	clk.Advance(1100 * time.Millisecond)
	if _, err := e.Complete(ctx, editToken(t, l.ID, func(map[string]any) {}), cairn.CompleteRequest{}); err == nil {
		t.Fatal("a complete past timeout_at was applied")
	}
	run2 := mustStart(t, e, "lf", `{}`)
	ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Run: run2, WaitMs: 1000})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	clk.Advance(1100 * time.Millisecond)
	if _, err := e.Fail(ctx, ls[0].ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable, Message: "calling upstream: context deadline exceeded"}}); err != nil {
		t.Fatalf("late fail refused: %v", err)
	}
	r := getRun(t, e, run2)
	if r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassTimeout || !strings.Contains(r.Error.Message, "calling upstream") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	_ = run
}

// TestRegisterFinishesAHalfDoneRegistration: a registration that wrote
// the definition and died (or lost the store's answer) before recording
// the version in the workflow's latest record is finished by the next
// registration of the same definition; before, the version stayed
// unstartable by name and unlisted forever (found by the chaos suite on
// MinIO with lost responses injected).
// A deployment refuses a changed definition of a registered version; with
// ReplaceDefinitions (cairn dev) the change replaces it: new runs use the
// new definition, a run in flight keeps the one it started with, to its
// end (its next step is the old definition's, on every instance, after a
// restart too: the revision is read from the bucket).
func TestChangedDefinitionReplacesTheOldInDev(t *testing.T) {
	oldWf := cairn.Workflow{Name: "edit", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "b", After: []string{"a"}}}}
	newWf := cairn.Workflow{Name: "edit", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "c", After: []string{"a"}}}}

	strict := newHarness(t, withWorkflows("w1", oldWf))
	_, err := strict.e.Register(strict.ctx, cairn.RegisterRequest{WorkerID: "w1", Workflows: []cairn.Workflow{newWf}})
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("a deployment took a changed definition: %v", err)
	}

	h := newHarness(t, withConfig(Config{ReplaceDefinitions: true}), withWorkflows("w1", oldWf))
	ctx, e := h.ctx, h.e
	inFlight := h.start("edit", "")
	h.complete(h.claim("w1").ID, `"A"`)
	register(t, e, "w1", newWf) // the worker restarted with edited code
	fresh := h.start("edit", "")
	if got, err := e.GetWorkflow(ctx, "edit", "1"); err != nil || got.Steps[1].ID != "c" {
		t.Fatalf("the stored definition: %+v %v", got, err)
	}
	// Another instance (a restart) reads the run's revision from the bucket.
	other, err := New(h.store, Config{ReplaceDefinitions: true, Now: h.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	seen := map[string]string{}
	for range 3 {
		ls, err := other.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 4, WaitMs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			seen[l.Run] += l.Step
			if _, err := other.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if seen[inFlight] != "b" || seen[fresh] != "ac" {
		t.Fatalf("steps run after the change: in flight %q (want b), new %q (want ac)", seen[inFlight], seen[fresh])
	}
	for run, want := range map[string]string{inFlight: "b", fresh: "c"} {
		r := h.run(run)
		if r.Status != cairn.RunCompleted || r.Step(want) == nil {
			t.Fatalf("run %s: %s, steps %+v", run, r.Status, r.Steps)
		}
	}
}

func TestRegisterFinishesAHalfDoneRegistration(t *testing.T) {
	h := newHarness(t, wallClock())
	ctx, e := h.ctx, h.e
	w := single("half", cairn.Step{})
	if _, err := e.store.Create(ctx, e.keys.Workflow(w.Name, w.Version), catalog.Canonical(w)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "half"}); !isNotFoundAPI(err) {
		t.Fatalf("start before the registration is finished: %v, want not found", err)
	}
	register(t, e, "w", w)
	if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "half"}); err != nil {
		t.Fatalf("start after registering again: %v", err)
	}
	wfs, err := e.ListWorkflows(ctx)
	if err != nil || len(wfs) != 1 || wfs[0].Name != "half" || wfs[0].Latest != "1" {
		t.Fatalf("workflows %+v, %v", wfs, err)
	}
}

// TestEventNoWaitUses: an event whose name no wait step of the run's
// definition waits for is kept like any early event, but the answer
// carries a warning naming the waits there are, and it is logged; an early
// event of a name a wait uses, and a duplicate, carry none.
func TestEventNoWaitUses(t *testing.T) {
	var logs testutil.SyncBuffer
	h := newHarness(t, withConfig(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}),
		withWorkflows("w",
			cairn.Workflow{Name: "appr", Version: "1", Steps: []cairn.Step{
				{ID: "a"},
				{ID: "w", Kind: cairn.KindWait, Event: "approved", After: []string{"a"}},
			}},
			single("plain", cairn.Step{})))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "appr", `{}`)
	res, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "aproved", ID: "e1"})
	if err != nil || !res.Recorded || !strings.Contains(res.Warning, `"aproved"`) || !strings.Contains(res.Warning, `its waits are for "approved"`) {
		t.Fatalf("typo: %+v %v", res, err)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "event=aproved") || !strings.Contains(l, "run="+run) {
		t.Fatalf("not logged:\n%s", l)
	}
	if res, err = e.SendEvent(ctx, run, cairn.EventRequest{Name: "aproved", ID: "e1"}); err != nil || !res.Duplicate || res.Warning != "" {
		t.Fatalf("duplicate: %+v %v", res, err)
	}
	if res, err = e.SendEvent(ctx, run, cairn.EventRequest{Name: "approved"}); err != nil || !res.Recorded || res.Warning != "" {
		t.Fatalf("early event of a wait: %+v %v", res, err)
	}
	other := mustStart(t, e, "plain", `{}`)
	if res, err = e.SendEvent(ctx, other, cairn.EventRequest{Name: "x"}); err != nil || !strings.Contains(res.Warning, "no wait step") || strings.Contains(res.Warning, "its waits") {
		t.Fatalf("no waits at all: %+v %v", res, err)
	}
}
