package sdk

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestClaimPause: a server that holds claims briefly and asks for a pause
// between empty ones (CAIRN_CLAIM_HOLD, CAIRN_CLAIM_PAUSE: Lambda's
// defaults) gets a few claims a period from an idle worker instead of one
// per hold, and the worker still picks up work that becomes ready while
// it pauses. Against the same hold without a pause, the worker claims
// again at once (the control: what the pause saves).
func TestClaimPause(t *testing.T) {
	const hold, pause, idleFor = 200 * time.Millisecond, 1500 * time.Millisecond, 4 * time.Second
	// calls is when the worker sent its claims and completes.
	type calls struct {
		mu                sync.Mutex
		claims, completes []time.Time
	}
	claimsWhileIdle := func(t *testing.T, pause time.Duration) (int64, *env, *calls) {
		e := newEnv(t, sdktest.Options{Engine: engine.Config{ClaimHold: hold, ClaimPause: pause}})
		var sent calls
		hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
			sent.mu.Lock()
			switch {
			case strings.HasSuffix(r.URL.Path, "/steps/claim"):
				sent.claims = append(sent.claims, time.Now())
			case strings.HasSuffix(r.URL.Path, "/complete"):
				sent.completes = append(sent.completes, time.Now())
			}
			sent.mu.Unlock()
			return next.RoundTrip(r)
		})
		wc := e.client(t, WithHTTPClient(hc))
		d := Workflow("paused", "1").Task("a", Handle(func(StepContext, struct{}) (int, error) { return 1, nil }))
		serve(t, NewWorker(wc, WithConcurrency(1), WithLogger(quiet())).Register(d))
		time.Sleep(idleFor)
		sent.mu.Lock()
		defer sent.mu.Unlock()
		return int64(len(sent.claims)), e, &sent
	}
	t.Run("pause", func(t *testing.T) {
		t.Parallel()
		n, e, sent := claimsWhileIdle(t, pause)
		// Pauses start at 1 s and double to 1.5 s, each 1/2 to all of
		// it: 4 s idle is 2 to 5 claims of 200 ms.
		if n < 2 || n > 5 {
			t.Fatalf("%d claims in %v idle with a %v hold and a %v pause; want 2 to 5", n, idleFor, hold, pause)
		}
		t.Logf("idle worker, %v hold, %v pause: %d claims in %v", hold, pause, n, idleFor)
		// Work that becomes ready while the worker pauses is picked up by
		// its next claim (or the one held as it starts): at most one
		// claim goes out between the start and the step's complete, and
		// it goes out within the pause. Measured from the calls the
		// worker sends, so the time the machine takes to start, run and
		// complete the step is not counted against the pause.
		began := time.Now()
		r := start(t, e.c, "paused", StartOptions{})
		if got := waitRun(t, e.c, r.ID, 10*time.Second); got.Status != RunCompleted {
			t.Fatalf("run %s", got.Status)
		}
		sent.mu.Lock()
		defer sent.mu.Unlock()
		if len(sent.completes) != 1 {
			t.Fatalf("%d completes sent, want 1", len(sent.completes))
		}
		var between []time.Duration // claims sent after the start began, before the complete
		for _, at := range sent.claims {
			if at.After(began) && at.Before(sent.completes[0]) {
				between = append(between, at.Sub(began))
			}
		}
		if len(between) > 1 || len(between) == 1 && between[0] > pause+500*time.Millisecond {
			t.Fatalf("claims sent between the start and the step's complete, after the start began: %v; want at most one, within the pause %v (+0.5 s)", between, pause)
		}
	})
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		n, _, _ := claimsWhileIdle(t, 0)
		if n < 10 {
			t.Fatalf("%d claims in %v idle with a %v hold and no pause; want about one per hold", n, idleFor, hold)
		}
		t.Logf("idle worker, %v hold, no pause: %d claims in %v", hold, n, idleFor)
	})
}

// TestEagerDispatchOneCallPerStep: a busy worker gets its next lease in
// the answer to complete (claim_next) instead of claiming again. A run of
// ten sequential steps on a one-slot worker takes ten completes and no
// more than a couple of claims (the first, and the one held after the
// run ended) — without eager dispatch it takes a claim per step.
func TestEagerDispatchOneCallPerStep(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var claims, completes atomic.Int64
	var completed atomic.Bool
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/steps/claim"):
			if !completed.Load() {
				claims.Add(1)
			}
		case strings.HasSuffix(r.URL.Path, "/complete"):
			completes.Add(1)
		}
		return next.RoundTrip(r)
	})
	wc := e.client(t, WithHTTPClient(hc))
	const n = 10
	d := Workflow("eager", "1")
	var ran atomic.Int64
	for i := range n {
		var opts []StepOption
		if i > 0 {
			opts = append(opts, After(fmt.Sprintf("s%02d", i-1)))
		}
		d.Task(fmt.Sprintf("s%02d", i), Handle(func(StepContext, struct{}) (int, error) { return int(ran.Add(1)), nil }), opts...)
	}
	serve(t, NewWorker(wc, WithConcurrency(1), WithLogger(quiet())).Register(d))
	r := start(t, e.c, "eager", StartOptions{})
	got := waitRun(t, e.c, r.ID, 30*time.Second)
	completed.Store(true)
	if got.Status != RunCompleted || ran.Load() != n {
		t.Fatalf("run %s, %d bodies ran; want completed, %d", got.Status, ran.Load(), n)
	}
	if c := completes.Load(); c != n {
		t.Fatalf("%d completes, want %d", c, n)
	}
	if c := claims.Load(); c > 3 {
		t.Fatalf("%d claims for %d sequential steps: the completes did not hand the next lease back", c, n)
	}
}

// Two unnamed Workers of one process (TestMapItemFailureOverHTTP runs
// one per version) must not share a worker id: the engine keeps one
// record per id, so the second registration replaced the first's served
// workflows; the first's next claim then leased the second's steps, failed
// them as unservable, and the engine avoided that id — both workers — for
// UnservableAvoid (30 s): map items sat ready for up to a minute.
func TestUnnamedWorkersDoNotShareAnID(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	one := Workflow("shared", "1").Task("t", Handle(func(StepContext, struct{}) (string, error) { return "one", nil }))
	two := Workflow("shared", "2").Task("t", Handle(func(StepContext, struct{}) (string, error) { return "two", nil }))
	var aClaims atomic.Int64 // claims a's server answered
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err == nil && isCall(r, "/steps/claim") {
			aClaims.Add(1)
		}
		return resp, err
	})
	a := NewWorker(e.client(t, WithHTTPClient(hc)), WithLogger(quiet()), WithClaimWait(50*time.Millisecond)).Register(one)
	b := NewWorker(e.c, WithLogger(quiet())).Register(two)
	if a.ID() == b.ID() {
		t.Errorf("two unnamed workers share the id %s", a.ID())
	}
	serve(t, a)
	// b registers (shared@2) and stops: from now on only a claims, and
	// it does not serve shared@2.
	if err := serve(t, b)(); err != nil {
		t.Fatal(err)
	}
	run := start(t, e.c, "shared", StartOptions{Version: "2"}).ID
	from := aClaims.Load()
	eventually(t, 10*time.Second, "ten of a's claims answered after the start", func() bool { return aClaims.Load() >= from+10 })
	j, err := e.c.Journal(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range j {
		if strings.Contains(en.Message, "does not serve") {
			t.Errorf("worker %s was leased a step of shared@2, which it does not serve: %s %s", en.Worker, en.Type, en.Message)
		}
	}
	// b again: it must get the step at once, not after an avoidance.
	serve(t, b)
	if r := waitRun(t, e.c, run, 5*time.Second); r.Status != RunCompleted || string(r.Output) != `"two"` {
		t.Fatalf("run %s %s", r.Status, r.Output)
	}
}

// TestWideWorkerHoldsAClaimPerHundredSlots: a worker with more slots
// than one claim may ask for (100) runs its work, and when idle holds a
// claim per 100 slots (100, 100 and 50), so a burst of starts is handed
// to its slots inside the starts' creates. Its claims asked for all free
// slots, which the server refuses with 422, so a worker of 101 slots ran
// nothing; then it held one claim of 100, and the rest of a burst waited
// as backlog, each paying a lease write.
func TestWideWorkerHoldsAClaimPerHundredSlots(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	d := Workflow("wide", "1").Task("a", Handle(func(StepContext, struct{}) (int, error) { return 1, nil }))
	serve(t, NewWorker(e.c, WithConcurrency(250), WithLogger(quiet())).Register(d))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.AwaitHeldClaims(ctx, 3); err != nil {
		t.Fatalf("an idle worker of 250 slots: the server holds fewer than 3 of its claims after 10s: %v", err)
	}
	var ids []string
	for range 5 {
		ids = append(ids, start(t, e.c, "wide", StartOptions{}).ID)
	}
	for _, id := range ids {
		if got := waitRun(t, e.c, id, 20*time.Second); got.Status != RunCompleted {
			t.Fatalf("run %s %s", id, got.Status)
		}
	}
}
