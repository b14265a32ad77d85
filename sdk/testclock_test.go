package sdk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// atStep waits (bounded) until step of run has status want, or, for a
// function's step (want ""), until its first attempt suspended.
func atStep(t *testing.T, c *Client, run, step string, want StepStatus) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, fmt.Sprintf("step %s %q", step, want), func() (bool, string) {
		r, err := c.Get(context.Background(), run)
		if err != nil {
			return false, err.Error()
		}
		for _, s := range r.Steps {
			if s.ID == step {
				suspended := len(s.Attempts) > 0 && s.Attempts[0].Outcome == cairn.OutcomeSuspended
				return want == "" && suspended || want != "" && s.Status == want, fmt.Sprintf("%s %+v", s.Status, s.Attempts)
			}
		}
		return false, "no step " + step
	})
}

// waitEnd waits (bounded) for run to end with status want.
func waitEnd(t *testing.T, c *Client, run string, want RunStatus) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Wait(ctx, run)
	if err != nil || r.Status != want {
		t.Fatalf("run %s: %+v %v, want %s within 30s of moving the clock", run, r, err, want)
	}
	return r
}

// TestAdvanceClock: a test moves the server's clock and hours pass in
// milliseconds — a sleep step of an hour and a wait's day-long timeout
// (which fails the run, class timeout) fire at the move that reaches
// them, not before; a durable function's
// sleep is measured on the server's clock (it runs after the clock was
// moved, so a sleep on the worker's clock would come due a day early);
// and a client moves the clock over HTTP, which a server without a test
// clock refuses with a 404.
func TestAdvanceClock(t *testing.T) {
	e := newEnv(t, sdktest.Options{ReapEvery: time.Hour}) // only the moves reap
	ctx := context.Background()
	noop := Handle(func(StepContext, struct{}) (struct{}, error) { return struct{}{}, nil })
	wf := Workflow("nap", "1").Task("a", noop).Sleep("s", time.Hour, After("a")).
		Wait("w", "never", After("s"), Timeout(24*time.Hour))
	fn := Function("fnap", "1", func(fc *Durable, _ struct{}) (string, error) {
		if err := fc.Sleep("nap", 24*time.Hour); err != nil {
			return "", err
		}
		return "rested", nil
	})
	defer serve(t, NewWorker(e.c).Register(wf, fn))()
	began := time.Now()

	r, err := e.c.Start(ctx, "nap", StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	atStep(t, e.c, r.ID, "s", StepSleeping)
	e.srv.Advance(59 * time.Minute)
	atStep(t, e.c, r.ID, "s", StepSleeping)
	e.srv.Advance(time.Minute)
	atStep(t, e.c, r.ID, "w", StepWaiting)
	e.srv.Advance(23 * time.Hour)
	atStep(t, e.c, r.ID, "w", StepWaiting)
	clk, err := e.c.AdvanceClock(ctx, time.Hour) // over HTTP
	if err != nil || clk.OffsetMs != (25*time.Hour).Milliseconds() || clk.Now.Before(began.Add(25*time.Hour)) {
		t.Fatalf("advance over HTTP: %+v %v", clk, err)
	}
	if end := waitEnd(t, e.c, r.ID, RunFailed); end.Error == nil || end.Error.Class != "timeout" {
		t.Fatalf("the wait's day-long timeout: %+v", end.Error)
	}

	f, err := e.c.Start(ctx, "fnap", StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	atStep(t, e.c, f.ID, "main", "")
	e.srv.Advance(24*time.Hour - time.Minute)
	if got, _ := e.c.Get(ctx, f.ID); got.Status != RunRunning {
		t.Fatalf("the function's day-long sleep ended a minute early: %s (its wake time was the worker's clock, not the server's?)", got.Status)
	}
	e.srv.Advance(time.Minute)
	waitEnd(t, e.c, f.ID, RunCompleted)
	if took := time.Since(began); took > time.Minute {
		t.Errorf("two days of runs took %v of real time", took)
	}

	plain := newEnv(t, sdktest.Options{Engine: engine.Config{Now: time.Now}})
	if _, err := plain.c.AdvanceClock(ctx, time.Hour); !IsNotFound(err) {
		t.Fatalf("a server without a test clock moved it: %v", err)
	}
}
