package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// The L2 bound of docs/ARCHITECTURE.md, read off the timer index alone:
// a due time d armed at now fires at the first reaper pass at or after
// timer.Due(d, now) — never before d, and at most keys.TimerBucket (or, for d
// nearer than timer.Lead, timer.Lead) plus the reaper's period after
// it. These tests drive passes on an injected clock at chosen phases
// against the due times, so the edges where a pass lands between a
// bucket's start and the due instant are hit on purpose, not by luck.

// clockAtPhase is a test clock set to a whole second plus phase.
func clockAtPhase(phase time.Duration) *clock {
	return clockAt(time.Unix(1_800_000_000, 0).UTC().Add(phase))
}

func TestTimerKeysNeverEarly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1_800_000_000, 0)
	for range 10_000 {
		now := base.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		due := now.Add(time.Duration(rng.Int64N(int64(10*time.Second))) - 2*time.Second)
		got := timer.Due(due, now)
		if got.Before(due) {
			t.Fatalf("timer.Due(%v, now %v) = %v: before the due time", due, now, got)
		}
		floor := due
		if lead := now.Add(timer.Lead); floor.Before(lead) {
			floor = lead
		}
		if got.Before(floor) || !got.Before(floor.Add(keys.TimerBucket)) {
			t.Fatalf("timer.Due(%v, now %v) = %v, want in [%v, %v)", due, now, got, floor, floor.Add(keys.TimerBucket))
		}
		if got.Truncate(keys.TimerBucket) != got {
			t.Fatalf("timer.Due = %v: not a bucket start", got)
		}
	}
}

// passesUntil runs a reaper pass every period until cond holds or limit
// passes ran, and returns the clock's time at the pass where it held.
func passesUntil(t *testing.T, e *Engine, clk *clock, period time.Duration, limit int, cond func() bool) time.Time {
	t.Helper()
	for range limit {
		clk.Advance(period)
		if _, err := e.Reap(context.Background()); err != nil {
			t.Fatal(err)
		}
		if cond() {
			return clk.Now()
		}
	}
	t.Fatalf("not done after %d passes of %v", limit, period)
	return time.Time{}
}

// TestUnstartedAttemptTimesOutOnTime is finding 3 of issue #23: an
// attempt claimed and never started nor heartbeated, with a 2 s timeout,
// failed one lease TTL late (28 s) when a pass came between its timer
// key's second and the timeout instant: the key was the timeout rounded
// down, the pass found nothing due, and re-armed the run a routine period
// later. Each claim phase × pass phase below is one such placement.
func TestUnstartedAttemptTimesOutOnTime(t *testing.T) {
	ctx := context.Background()
	const period = time.Second
	for _, claimPhase := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond} {
		for _, passPhase := range []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond, 950 * time.Millisecond} {
			t.Run(fmt.Sprintf("claim+%v/pass+%v", claimPhase, passPhase), func(t *testing.T) {
				clk := clockAtPhase(claimPhase)
				e := newTestEngine(t, nil, Config{Now: clk.Now})
				register(t, e, "w", single("to", cairn.Step{Timeout: cairn.Duration(2 * time.Second), Retry: &cairn.RetryPolicy{MaxAttempts: 2, InitialBackoff: cairn.Duration(time.Millisecond)}}))
				run := mustStart(t, e, "to", `{}`)
				for attempt := 1; attempt <= 2; attempt++ {
					l := claimOne(t, e, "w")
					if attempt == 1 {
						if _, err := e.Started(ctx, l.ID); err != nil {
							t.Fatal(err)
						}
					}
					// Passes at passPhase within each second.
					off := passPhase - clk.Now().Sub(clk.Now().Truncate(time.Second))
					if off <= 0 {
						off += time.Second
					}
					clk.Advance(off - period)
					at := passesUntil(t, e, clk, period, 60, func() bool {
						s := stepOf(getRun(t, e, run), "only")
						return s.Attempt > attempt || s.Status == cairn.StepFailed
					})
					bound := timer.Due(*l.TimeoutAt, l.ExpiresAt.Add(-e.cfg.LeaseTTL)).Add(period)
					if at.Before(*l.TimeoutAt) || at.After(bound) {
						t.Fatalf("attempt %d (timeout at %v) timed out at the pass at %v: %v after its timeout, bound %v",
							attempt, l.TimeoutAt.Format("15:04:05.000"), at.Format("15:04:05.000"), at.Sub(*l.TimeoutAt), bound.Sub(*l.TimeoutAt))
					}
					clk.Advance(2 * time.Millisecond) // past the retry's backoff
				}
				r := getRun(t, e, run)
				if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassTimeout {
					t.Fatalf("run %s %+v, want failed with class timeout", r.Status, r.Error)
				}
			})
		}
	}
}

// TestLeaseExpiryRecoveredOnTime: a lease whose worker never heartbeats is
// recovered at the first pass at or after its expiry plus the recovery
// window (rounded up to a bucket), not at the routine visit after that
// (one more ActiveCheckInterval late).
func TestLeaseExpiryRecoveredOnTime(t *testing.T) {
	for _, passPhase := range []time.Duration{0, 400 * time.Millisecond, 800 * time.Millisecond} {
		t.Run(fmt.Sprintf("pass+%v", passPhase), func(t *testing.T) {
			clk := clockAtPhase(300 * time.Millisecond)
			e := newTestEngine(t, nil, Config{Now: clk.Now, LeaseTTL: 6 * time.Second})
			register(t, e, "w", single("ex", cairn.Step{}))
			run := mustStart(t, e, "ex", `{}`)
			l := claimOne(t, e, "w")
			clk.Advance(passPhase + 700*time.Millisecond - time.Second)
			at := passesUntil(t, e, clk, time.Second, 60, func() bool { return stepOf(getRun(t, e, run), "only").Attempt > 1 })
			due := l.ExpiresAt.Add(e.cfg.RecoveryWindow)
			if bound := timer.CeilTo(due, keys.TimerBucket).Add(time.Second); at.Before(due) || at.After(bound) {
				t.Fatalf("lease recoverable at %v was recovered at the pass at %v (%v late; bound %v)", due.Format("15:04:05.000"), at.Format("15:04:05.000"), at.Sub(due), bound.Sub(due))
			}
		})
	}
}

// TestShortTimersFireWithinBound is finding 4 of issue #23: short sleeps,
// wait timeouts and run deadlines fired up to 2 s late, and sometimes at a
// pass before the due instant that then re-armed. Each fires at the first
// pass at or after its timer key (≤ due + keys.TimerBucket + period), and,
// where the instance that armed it keeps own wakes (cairn dev), at its
// due instant.
func TestShortTimersFireWithinBound(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		wf    cairn.Workflow
		due   time.Duration // after the task's complete
		fired func(r *cairn.Run) bool
	}{
		{"sleep 3s", cairn.Workflow{Steps: []cairn.Step{{ID: "t"}, {ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(3 * time.Second), After: []string{"t"}}}}, 3 * time.Second,
			func(r *cairn.Run) bool { return stepOf(r, "nap").Status == cairn.StepCompleted }},
		{"wait timeout 2s", cairn.Workflow{Steps: []cairn.Step{{ID: "t"}, {ID: "w", Kind: cairn.KindWait, Event: "e", WaitTimeout: cairn.Duration(2 * time.Second), After: []string{"t"}}}}, 2 * time.Second,
			func(r *cairn.Run) bool { return r.Status == cairn.RunFailed }},
		{"sleep 1s", cairn.Workflow{Steps: []cairn.Step{{ID: "t"}, {ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Second), After: []string{"t"}}}}, time.Second,
			func(r *cairn.Run) bool { return stepOf(r, "nap").Status == cairn.StepCompleted }},
	}
	rng := rand.New(rand.NewPCG(23, 4))
	for _, c := range cases {
		for i := range 10 {
			phase := time.Duration(rng.Int64N(int64(time.Second)))
			passPhase := time.Duration(rng.Int64N(int64(time.Second)))
			own := i%2 == 1
			t.Run(fmt.Sprintf("%s/%d/own=%v", c.name, i, own), func(t *testing.T) {
				clk := clockAtPhase(phase)
				e := newTestEngine(t, nil, Config{Now: clk.Now})
				if own {
					e.KeepOwnWakes()
				}
				wf := c.wf
				wf.Name, wf.Version = "short", "1"
				register(t, e, "w", wf)
				run := mustStart(t, e, "short", `{}`)
				l := claimOne(t, e, "w")
				if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
					t.Fatal(err)
				}
				due := clk.Now().Add(c.due)
				fired := func() bool { return c.fired(getRun(t, e, run)) }
				if own {
					in, ok, _ := e.NextOwnWake()
					if !ok {
						t.Fatal("no own wake kept for the timer this instance armed")
					}
					clk.Advance(in)
					e.VisitOwnWakes(ctx)
					if !fired() || clk.Now().Sub(due) > 0 {
						t.Fatalf("own wake at %v (due %v): fired %v", clk.Now().Format("15:04:05.000"), due.Format("15:04:05.000"), fired())
					}
					return
				}
				off := passPhase - clk.Now().Sub(clk.Now().Truncate(time.Second))
				if off <= 0 {
					off += time.Second
				}
				clk.Advance(off - time.Second)
				at := passesUntil(t, e, clk, time.Second, 30, fired)
				bound := timer.Due(due, due.Add(-c.due)).Add(time.Second)
				if at.Before(due) || at.After(bound) {
					t.Fatalf("due at %v, fired at the pass at %v: %v late, bound %v", due.Format("15:04:05.000"), at.Format("15:04:05.000"), at.Sub(due), bound.Sub(due))
				}
			})
		}
	}
}

// TestLapsedLeaseRefusesHeartbeat is finding 5 of issue #23: with a 6 s
// TTL a heartbeat at 12 s still renewed a lease no reaper pass had
// visited. Past its expiry and the recovery window a lease is lapsed
// whether or not a pass came: the heartbeat is fenced and the attempt is
// lost (re-queued) in the run record at once.
func TestLapsedLeaseRefusesHeartbeat(t *testing.T) {
	ctx := context.Background()
	clk := clockAtPhase(0)
	e := newTestEngine(t, nil, Config{Now: clk.Now, LeaseTTL: 6 * time.Second})
	register(t, e, "w", single("lap", cairn.Step{}))
	run := mustStart(t, e, "lap", `{}`)
	l := claimOne(t, e, "w")
	// Within the TTL and within the recovery window, heartbeats renew.
	clk.Advance(5 * time.Second)
	if _, err := e.Heartbeat(ctx, l.ID); err != nil {
		t.Fatalf("heartbeat within the TTL: %v", err)
	}
	clk.Advance(6*time.Second + e.cfg.RecoveryWindow - time.Millisecond)
	if _, err := e.Heartbeat(ctx, l.ID); err != nil {
		t.Fatalf("heartbeat within the recovery window: %v", err)
	}
	clk.Advance(12 * time.Second)
	_, err := e.Heartbeat(ctx, l.ID)
	wantReason(t, err, cairn.ReasonFenced)
	s := stepOf(getRun(t, e, run), "only")
	if s.Attempt != 2 || len(s.Attempts) == 0 || s.Attempts[0].Outcome != cairn.OutcomeLost {
		t.Fatalf("after the refused heartbeat: attempt %d, attempts %+v; want attempt 1 lost and attempt 2 ready", s.Attempt, s.Attempts)
	}
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err == nil {
		t.Fatal("a complete on the lapsed lease was applied")
	}
}

// TestDueTimesFireOnTime: every due time fires within the reaper period
// plus timer.Lead wherever it sits in the DAG, even when the run has a
// later timer already.
func TestDueTimesFireOnTime(t *testing.T) {
	ctx := context.Background()
	slack := timer.Lead + time.Second
	cases := []struct {
		name  string
		steps []cairn.Step
		due   time.Duration
		check func(t *testing.T, r *cairn.Run)
	}{
		{"sleep after a task", []cairn.Step{{ID: "t"}, {ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(3 * time.Second), After: []string{"t"}}}, 3 * time.Second,
			func(t *testing.T, r *cairn.Run) {
				if s := stepOf(r, "nap"); s.Status != cairn.StepCompleted {
					t.Fatalf("sleep %s", s.Status)
				}
			}},
		{"wait timeout after a task", []cairn.Step{{ID: "t"}, {ID: "w", Kind: cairn.KindWait, Event: "e", WaitTimeout: cairn.Duration(2 * time.Second), After: []string{"t"}}}, 2 * time.Second,
			func(t *testing.T, r *cairn.Run) {
				if r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassTimeout {
					t.Fatalf("run %s %+v", r.Status, r.Error)
				}
			}},
		{"attempt timeout", []cairn.Step{{ID: "t"}, {ID: "slow", Timeout: cairn.Duration(2 * time.Second), After: []string{"t"}, Retry: &cairn.RetryPolicy{MaxAttempts: 1}}}, 2 * time.Second,
			func(t *testing.T, r *cairn.Run) {
				if r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassTimeout {
					t.Fatalf("run %s %+v", r.Status, r.Error)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, withWorkflows("w", cairn.Workflow{Name: "d", Version: "1", Steps: c.steps}))
			clk, e := h.clk, h.e
			run := mustStart(t, e, "d", `{}`)
			l := claimOne(t, e, "w")
			if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
				t.Fatal(err)
			}
			if c.name == "attempt timeout" {
				claimOne(t, e, "w") // the worker holds it and heartbeats nothing
			}
			clk.Advance(c.due + slack)
			if _, err := e.Reap(ctx); err != nil {
				t.Fatal(err)
			}
			c.check(t, getRun(t, e, run))
		})
	}
	t.Run("retry backoff", func(t *testing.T) {
		h := newHarness(t, withWorkflows("w", single("b", cairn.Step{Retry: &cairn.RetryPolicy{InitialBackoff: cairn.Duration(3 * time.Second)}})))
		clk, e := h.clk, h.e
		mustStart(t, e, "b", `{}`)
		l := claimOne(t, e, "w")
		if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable}}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(3*time.Second*12/10 + slack)
		st, err := e.Reap(ctx)
		if err != nil || st.RunsVisited != 1 {
			t.Fatalf("reap after the backoff: %+v %v (the retry was not looked at when due)", st, err)
		}
	})
}
