package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

type order struct {
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

type receipt struct {
	Charge  string `json:"charge"`
	Shipped bool   `json:"shipped"`
	ID      string `json:"id"`
}

// A durable function runs its steps once each, across a sleep that
// suspends it (the attempt ends, the next one replays the body): the
// steps before the sleep are not run again, the recorded values are the
// same after the replay, and the run's history shows every operation.
func TestFunctionRunsStepsOnceAcrossASuspension(t *testing.T) {
	e := newEnv(t, fastReap())
	var charges, ships, bodies atomic.Int32
	ids := make(chan string, 4)
	wf := Function("checkout", "1", func(fc *Durable, o order) (receipt, error) {
		bodies.Add(1)
		id := fc.UUID()
		ids <- id
		charge, err := Step(fc, "charge", func(ctx context.Context) (string, error) {
			charges.Add(1)
			return "ch_" + o.Item, nil
		})
		if err != nil {
			return receipt{}, err
		}
		if err := fc.Sleep("cool-off", inlineSleep+time.Second); err != nil {
			return receipt{}, err
		}
		shipped, err := Step(fc, "ship", func(ctx context.Context) (bool, error) {
			ships.Add(1)
			return o.Qty > 0, nil
		})
		return receipt{Charge: charge, Shipped: shipped, ID: id}, err
	})
	w := NewWorker(e.client(t), WithLogger(quiet())).Register(wf)
	serve(t, w)
	run := start(t, e.c, "checkout", StartOptions{Input: order{Item: "book", Qty: 2}})
	r := waitRun(t, e.c, run.ID, 30*time.Second)
	var got receipt
	if err := r.Decode(&got); err != nil || r.Status != RunCompleted {
		t.Fatalf("run %s %+v: %v", r.Status, r.Error, err)
	}
	first, second := <-ids, <-ids
	if got.Charge != "ch_book" || !got.Shipped || got.ID != first || second != first {
		t.Fatalf("receipt %+v; uuids %s then %s", got, first, second)
	}
	if charges.Load() != 1 || ships.Load() != 1 || bodies.Load() != 2 {
		t.Fatalf("charge ran %d times, ship %d, the body %d; want 1, 1, 2", charges.Load(), ships.Load(), bodies.Load())
	}
	st := r.Step("main")
	var names []string
	for _, op := range st.Operations {
		names = append(names, op.ID)
	}
	if strings.Join(names, " ") != "/uuid#0 /charge#0 /cool-off#0 /ship#0" {
		t.Fatalf("history %v", names)
	}
	if len(st.Attempts) != 2 || st.Attempts[0].Outcome != cairn.OutcomeSuspended || st.Attempts[1].Outcome != cairn.OutcomeCompleted {
		t.Fatalf("attempts %+v", st.Attempts)
	}
	sleep := st.Operations[2]
	resumed := st.Attempts[1].ClaimedAt
	if resumed == nil || resumed.Before(*sleep.WakeAt) || resumed.Sub(*sleep.WakeAt) > 3*time.Second {
		t.Fatalf("the sleep ended at %v, the function resumed at %v: want within 3s after", sleep.WakeAt, resumed)
	}
}

// A driver whose worker stops answering mid-step is fenced; the next
// attempt replays what it checkpointed: the step that completed before is
// not run again, the one that was running is.
func TestFunctionResumesAfterTheDriverIsLost(t *testing.T) {
	e := newEnv(t, fastReap())
	p := &pausable{}
	var firsts, seconds atomic.Int32
	wf := Function("lossy", "1", func(fc *Durable, _ struct{}) (string, error) {
		a, err := Step(fc, "first", func(ctx context.Context) (string, error) {
			firsts.Add(1)
			return "a", nil
		})
		if err != nil {
			return "", err
		}
		return Step(fc, "second", func(ctx context.Context) (string, error) {
			if seconds.Add(1) == 1 {
				// Once "first" is checkpointed, the worker goes silent
				// until the engine reclaims the driver's lease.
				eventually(t, 10*time.Second, "first checkpointed", func() bool {
					r, err := e.c.Get(ctx, fc.Info().Run)
					return err == nil && len(r.Step("main").Operations) == 1
				})
				p.cutOffUntilLost(t, e.c, fc.sc)
				<-ctx.Done()
				return "", context.Cause(ctx)
			}
			return a + "b", nil
		})
	})
	w := NewWorker(e.client(t, WithHTTPClient(p.client())), WithLogger(quiet())).Register(wf)
	serve(t, w)
	run := start(t, e.c, "lossy", StartOptions{})
	r := waitRun(t, e.c, run.ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"ab"` {
		t.Fatalf("run %s output %s error %+v", r.Status, r.Output, r.Error)
	}
	if firsts.Load() != 1 || seconds.Load() != 2 {
		t.Fatalf("first ran %d times, second %d; want 1 and 2", firsts.Load(), seconds.Load())
	}
	if a := r.Step("main").Attempts; len(a) != 2 || a[0].Outcome != cairn.OutcomeLost {
		t.Fatalf("attempts %+v", a)
	}
}

// Code changed under a run in flight fails the run with class
// nondeterminism, naming the operation; Patched lets the new code run for
// new runs while runs recorded by the old code keep the old path.
func TestFunctionNondeterminismAndPatched(t *testing.T) {
	e := newEnv(t, fastReap())
	old := func(fc *Durable, _ struct{}) (string, error) {
		if _, err := Step(fc, "a", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return "", err
		}
		if err := fc.Sleep("wait", inlineSleep+500*time.Millisecond); err != nil {
			return "", err
		}
		return "old", nil
	}
	// v1 runs two runs to their sleep, then a worker with changed code
	// serves them: one change breaks the history, one is gated.
	w1 := NewWorker(e.client(t), WithLogger(quiet())).Register(Function("changing", "1", old), Function("gated", "1", old))
	stop1 := serve(t, w1)
	broken := start(t, e.c, "changing", StartOptions{})
	gated := start(t, e.c, "gated", StartOptions{})
	for _, id := range []string{broken.ID, gated.ID} {
		awaitSuspended(t, e.c, id)
	}
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	changed := func(fc *Durable, _ struct{}) (string, error) {
		if err := fc.Sleep("a", time.Millisecond); err != nil { // a step became a sleep
			return "", err
		}
		return "new", nil
	}
	patched := func(fc *Durable, _ struct{}) (string, error) {
		if fc.Patched("skip-a") {
			return "patched", nil
		}
		return old(fc, struct{}{})
	}
	w2 := NewWorker(e.client(t), WithLogger(quiet())).Register(Function("changing", "1", changed), Function("gated", "1", patched))
	serve(t, w2)
	r := waitRun(t, e.c, broken.ID, 30*time.Second)
	if r.Status != RunFailed || r.Error.Class != cairn.ClassNondeterminism || !strings.Contains(r.Error.Message, `replay reached sleep "/a#0" where the history records step "/a#0"`) {
		t.Fatalf("changed code: run %s %+v", r.Status, r.Error)
	}
	if r = waitRun(t, e.c, gated.ID, 30*time.Second); r.Status != RunCompleted || string(r.Output) != `"old"` {
		t.Fatalf("gated run in flight: %s %s %+v", r.Status, r.Output, r.Error)
	}
	fresh := start(t, e.c, "gated", StartOptions{})
	if r = waitRun(t, e.c, fresh.ID, 30*time.Second); r.Status != RunCompleted || string(r.Output) != `"patched"` {
		t.Fatalf("a new run of the gated code: %s %s %+v", r.Status, r.Output, r.Error)
	}
}

// flaky is a step's body that fails as retryable twice, then returns 7;
// tries counts its calls.
func flaky(tries *atomic.Int32) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		if tries.Add(1) < 3 {
			return 0, Retryable(errors.New("not yet"))
		}
		return 7, nil
	}
}

// A step's error is retried within the function's attempt by its class,
// and one that ends the step fails the function with its class; an
// at_most_once step that started is never run again.
func TestFunctionStepErrors(t *testing.T) {
	e := newEnv(t, fastReap())
	var tries atomic.Int32
	wf := Function("errs", "1", func(fc *Durable, _ struct{}) (int, error) {
		n, err := Step(fc, "flaky", flaky(&tries), Retry(RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond}))
		if err != nil {
			return 0, err
		}
		_, err = Step(fc, "declined", func(context.Context) (int, error) {
			return 0, Failure("card_declined", errors.New("insufficient funds"))
		}, AtMostOnce())
		return n, err
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "errs", StartOptions{}).ID, 30*time.Second)
	if r.Status != RunFailed || r.Error.Class != "card_declined" || tries.Load() != 3 {
		t.Fatalf("run %s %+v, flaky tried %d times", r.Status, r.Error, tries.Load())
	}
	ops := r.Step("main").Operations
	if len(ops) != 3 || ops[1].Status != cairn.OpStarted || ops[2].Status != cairn.OpFailed || ops[2].Error.Class != "card_declined" {
		t.Fatalf("history %+v", ops)
	}
}

// A step's backoff longer than an inline sleep suspends the function: the
// backoff is recorded (<step>.retry#<n>, the failures so far), the next
// attempt tries again after it, and a replay past the completed step
// finds its backoffs reached.
func TestFunctionStepBackoffSuspends(t *testing.T) {
	e := newEnv(t, fastReap())
	var tries atomic.Int32
	wf := Function("backoff", "1", func(fc *Durable, _ struct{}) (int, error) {
		n, err := Step(fc, "flaky", flaky(&tries), Retry(RetryPolicy{MaxAttempts: 3, InitialBackoff: inlineSleep + time.Second, Multiplier: 1}))
		if err != nil {
			return 0, err
		}
		return n, fc.Sleep("after", inlineSleep+time.Second) // one more replay, past the step
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "backoff", StartOptions{}).ID, 60*time.Second)
	if r.Status != RunCompleted || string(r.Output) != "7" || tries.Load() != 3 {
		t.Fatalf("run %s %s %+v, flaky tried %d times", r.Status, r.Output, r.Error, tries.Load())
	}
	st := r.Step("main")
	suspended := 0
	for _, a := range st.Attempts {
		if a.Outcome == cairn.OutcomeSuspended {
			suspended++
		}
	}
	ops := st.Operations
	if suspended != 3 || len(ops) != 4 || ops[0].ID != "/flaky#0.retry#0" || ops[1].ID != "/flaky#0.retry#1" || ops[0].Kind != cairn.OpSleep ||
		string(ops[1].Result) != `{"failures":2}` || ops[2].ID != "/flaky#0" || ops[2].Status != cairn.OpCompleted {
		t.Fatalf("%d suspended attempts, history %+v", suspended, ops)
	}
}

// A counter continues as new three times, each run with a fresh history;
// Wait follows the chain to the last run's output.
func TestFunctionContinuesAsNew(t *testing.T) {
	e := newEnv(t, fastReap())
	type page struct{ N int }
	wf := Function("pager", "1", func(fc *Durable, in page) (int, error) {
		n, err := Step(fc, "fetch", func(context.Context) (int, error) { return in.N + 1, nil })
		if err != nil || n >= 4 {
			return n * 10, err
		}
		return 0, ContinueAsNew(page{N: n})
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	first := start(t, e.c, "pager", StartOptions{Input: page{N: 0}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last, err := e.c.Wait(ctx, first.ID)
	if err != nil || last.Status != RunCompleted || string(last.Output) != "40" || last.ContinuedFrom == "" {
		t.Fatalf("the chain's last run: %+v %v", last, err)
	}
	chain := 1
	for id := last.ContinuedFrom; id != ""; chain++ {
		r, err := e.c.Get(ctx, id)
		if err != nil || r.Status != RunCompleted || r.ContinuedAs == "" || len(r.Step("main").Operations) != 1 {
			t.Fatalf("run %s of the chain: %+v %v", id, r, err)
		}
		id = r.ContinuedFrom
	}
	if chain != 4 {
		t.Fatalf("a chain of %d runs, want 4", chain)
	}
}

// A function waits for an event (suspended meanwhile: no worker slot is
// held) and gets its payload; a wait past its timeout returns an error of
// class timeout, which the body may handle.
func TestFunctionWaitsForAnEvent(t *testing.T) {
	e := newEnv(t, fastReap())
	type decision struct {
		By string `json:"by"`
	}
	wf := Function("approval", "1", func(fc *Durable, _ struct{}) (string, error) {
		raw, err := fc.WaitEvent("approval", "approve", time.Minute)
		if err != nil {
			return "", err
		}
		var d decision
		if err := json.Unmarshal(raw, &d); err != nil {
			return "", err
		}
		if _, err := fc.WaitEvent("second-look", "never", inlineSleep+time.Second); ClassOf(err) != cairn.ClassTimeout {
			return "", fmt.Errorf("want a timeout, got %v", err)
		}
		return "approved by " + d.By, nil
	})
	w := NewWorker(e.client(t), WithLogger(quiet())).Register(wf)
	serve(t, w)
	run := start(t, e.c, "approval", StartOptions{})
	awaitSuspended(t, e.c, run.ID)
	// The engine records the suspension before the worker has let go of
	// the attempt: the slot is free within moments, not at once.
	eventually(t, 5*time.Second, "the worker to hold no lease while the function waits", func() bool { return w.InFlight() == 0 })
	if _, err := e.c.SendEvent(context.Background(), run.ID, Event{Name: "approve", Payload: decision{By: "ann"}}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e.c, run.ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"approved by ann"` {
		t.Fatalf("run %s %s %+v", r.Status, r.Output, r.Error)
	}
	ops := r.Step("main").Operations
	if len(ops) != 4 || ops[1].Status != cairn.OpCompleted || ops[3].Status != cairn.OpFailed || ops[3].Error.Class != cairn.ClassTimeout {
		t.Fatalf("history %+v", ops)
	}
}

// A function invokes a DAG and gets its output; a DAG's child step runs
// a function; a run the function invokes that fails fails the invoke
// with its class.
func TestFunctionInvokesWorkflows(t *testing.T) {
	e := newEnv(t, fastReap())
	var billed atomic.Int32
	billing := Workflow("billing", "1").Task("charge", Handle(func(_ StepContext, o order) (string, error) {
		billed.Add(1)
		if o.Qty == 0 {
			return "", Failure("empty_order", errors.New("nothing to bill"))
		}
		return fmt.Sprintf("invoice %s x%d", o.Item, o.Qty), nil
	}), Retry(RetryPolicy{NonRetryable: []string{"empty_order"}}))
	checkout := Function("shop", "1", func(fc *Durable, o order) (string, error) {
		inv, err := Invoke[string](fc, "bill", Call{Workflow: "billing", Input: o})
		if ClassOf(err) == "empty_order" {
			return "nothing to do", nil
		}
		return inv, err
	})
	outer := Workflow("outer", "1").Child("shop", "shop", Input(map[string]any{"item": "pen", "qty": 3}))
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(billing, checkout, outer))

	r := waitRun(t, e.c, start(t, e.c, "shop", StartOptions{Input: order{Item: "book", Qty: 2}}).ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"invoice book x2"` {
		t.Fatalf("function invoking a DAG: %s %s %+v", r.Status, r.Output, r.Error)
	}
	ops := r.Step("main").Operations
	if len(ops) != 2 || ops[0].Kind != cairn.OpInvoke || ops[1].Status != cairn.OpCompleted {
		t.Fatalf("history %+v", ops)
	}
	if r = waitRun(t, e.c, start(t, e.c, "shop", StartOptions{Input: order{Item: "air"}}).ID, 30*time.Second); string(r.Output) != `"nothing to do"` {
		t.Fatalf("a failed invoke handled: %s %s %+v", r.Status, r.Output, r.Error)
	}
	if r = waitRun(t, e.c, start(t, e.c, "outer", StartOptions{}).ID, 30*time.Second); r.Status != RunCompleted || string(r.Output) != `"invoice pen x3"` {
		t.Fatalf("a DAG running a function as its child: %s %s %+v", r.Status, r.Output, r.Error)
	}
	if billed.Load() != 3 {
		t.Fatalf("billing ran %d times, want 3 (each invoked run once)", billed.Load())
	}
}

// A worker that drains past its timeout suspends the functions it cuts
// off (no failure, no retry budget): another worker resumes them from
// what they recorded.
func TestDrainSuspendsFunctions(t *testing.T) {
	var firsts atomic.Int32
	r := drainMidway(t, "drained", func(began chan<- struct{}) *WorkflowDef {
		return Function("drained", "1", func(fc *Durable, _ struct{}) (string, error) {
			if _, err := Step(fc, "first", func(context.Context) (int, error) { return int(firsts.Add(1)), nil }); err != nil {
				return "", err
			}
			return Step(fc, "slow", func(ctx context.Context) (string, error) {
				if fc.Info().Attempt > 1 {
					return "resumed", nil
				}
				began <- struct{}{}
				<-ctx.Done()
				return "", ctx.Err()
			})
		})
	})
	if r.Status != RunCompleted || string(r.Output) != `"resumed"` || firsts.Load() != 1 {
		t.Fatalf("run %s %s %+v; first ran %d times", r.Status, r.Output, r.Error, firsts.Load())
	}
	if a := r.Step("main").Attempts; len(a) != 2 || a[0].Outcome != cairn.OutcomeSuspended || r.Step("main").Failures != 0 {
		t.Fatalf("attempts %+v", a)
	}
}

// drainMidway starts a run of the function name that def defines, served
// by a worker whose drain times out after 200ms, stops that worker once
// the body sends on began, and serves the function on a second worker:
// it returns the run once it ended.
func drainMidway(t *testing.T, name string, def func(began chan<- struct{}) *WorkflowDef) *Run {
	t.Helper()
	e := newEnv(t, sdktest.Options{})
	began := make(chan struct{}, 1)
	stop := serve(t, NewWorker(e.c, WithLogger(quiet()), WithDrainTimeout(200*time.Millisecond)).Register(def(began)))
	run := start(t, e.c, name, StartOptions{})
	<-began
	stopWithin(t, stop, 3*time.Second)
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(def(began)))
	return waitRun(t, e.c, run.ID, 10*time.Second)
}

// Map runs its items at once in scopes of their own; a branch that
// sleeps parks until the others are done, and the function suspends once:
// on replay no item's step runs again. Parallel is Map over branches.
func TestFunctionMapAndParallel(t *testing.T) {
	e := newEnv(t, fastReap())
	var runs atomic.Int32
	wf := Function("fan", "1", func(fc *Durable, xs []int) (int, error) {
		sq, err := Map(fc, "square", xs, 2, func(fc *Durable, x int) (int, error) {
			v, err := Step(fc, "mul", func(context.Context) (int, error) { runs.Add(1); return x * x, nil })
			if err == nil && x == 3 {
				err = fc.Sleep("rest", inlineSleep+time.Second) // one branch suspends the function
			}
			return v, err
		})
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, v := range sq {
			sum += v
		}
		var a, b int
		err = fc.Parallel("both",
			func(fc *Durable) (err error) {
				a, err = Step(fc, "a", func(context.Context) (int, error) { return 1, nil })
				return err
			},
			func(fc *Durable) (err error) {
				b, err = Step(fc, "b", func(context.Context) (int, error) { return 2, nil })
				return err
			},
		)
		return sum + a + b, err
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "fan", StartOptions{Input: []int{1, 2, 3, 4, 5}}).ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.Output) != "58" || runs.Load() != 5 {
		t.Fatalf("run %s %s %+v; the item steps ran %d times, want 5", r.Status, r.Output, r.Error, runs.Load())
	}
	ids := map[string]bool{}
	for _, op := range r.Step("main").Operations {
		ids[op.ID] = true
	}
	for _, id := range []string{"/square#0/0/mul#0", "/square#0/4/mul#0", "/square#0/2/rest#0", "/both#0/0/a#0", "/both#0/1/b#0"} {
		if !ids[id] {
			t.Errorf("history has no %s: %v", id, ids)
		}
	}
	if a := r.Step("main").Attempts; len(a) != 2 || a[0].Outcome != cairn.OutcomeSuspended {
		t.Fatalf("attempts %+v", a)
	}
}

// A step cut off by its own timeout fails with class timeout, as a task's
// attempt; thousands of recorded values go out in checkpoints the engine
// takes (at most 1,000 operations each).
func TestFunctionStepTimeoutAndManyValues(t *testing.T) {
	e := newEnv(t, fastReap())
	wf := Function("bounded", "1", func(fc *Durable, _ struct{}) (int, error) {
		for range 2500 {
			fc.UUID()
		}
		_, err := Step(fc, "slow", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}, Timeout(50*time.Millisecond), Retry(RetryPolicy{MaxAttempts: 1}))
		return 0, err
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "bounded", StartOptions{}).ID, 30*time.Second)
	if r.Status != RunFailed || r.Error.Class != cairn.ClassTimeout || len(r.Step("main").Operations) != 2501 {
		t.Fatalf("run %s %+v, %d operations", r.Status, r.Error, len(r.Step("main").Operations))
	}
}

// asking is a step body that calls a model: a span with 30 input and 7
// output tokens of model-a.
func asking(tracer trace.Tracer) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		_, span := tracer.Start(ctx, "chat", trace.WithAttributes(attribute.String(AttrRequestModel, "model-a"),
			attribute.Int64(AttrInputTokens, 30), attribute.Int64(AttrOutputTokens, 7)))
		span.End()
		return 1, nil
	}
}

// askingFunction defines the function name: its first step, ask, is
// asking (model usage on tracer's spans); then comes then, given ask's
// result.
func askingFunction(name string, tracer trace.Tracer, then func(fc *Durable, n int) (int, error)) *WorkflowDef {
	return Function(name, "1", func(fc *Durable, _ struct{}) (int, error) {
		n, err := Step(fc, "ask", asking(tracer))
		if err != nil {
			return 0, err
		}
		return then(fc, n)
	})
}

// Each step of a function is a span under the function's step span, with
// its operation id and, on failure, its class; the model usage its spans
// carry sums into the function's step.
func TestFunctionStepSpansAndUsage(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	rec, tp := recordSpans(t)
	wf := askingFunction("spans", tp.Tracer("test"), func(fc *Durable, n int) (int, error) {
		// Not retried: the default policy's second backoff (2 s ± 20 %)
		// could suspend the function, and this test reads one attempt.
		_, err := Step(fc, "fails", func(context.Context) (int, error) { return 0, Failure("nope", errors.New("no")) }, Retry(RetryPolicy{MaxAttempts: 1}))
		if ClassOf(err) != "nope" {
			return 0, fmt.Errorf("want class nope, got %v", err)
		}
		return n, nil
	})
	serve(t, NewWorker(e.c, WithLogger(quiet()), WithTracerProvider(tp)).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "spans", StartOptions{}).ID, 10*time.Second)
	if u := r.Step("main").Usage; r.Status != RunCompleted || u.Model != "model-a" || u.InputTokens != 30 || u.OutputTokens != 7 {
		t.Fatalf("run %s %+v; usage %+v", r.Status, r.Error, u)
	}
	var stepSpan trace.SpanContext
	ops := map[string]sdktrace.ReadOnlySpan{}
	// The step's span ends once the worker is done with the attempt, which
	// may be after the run's end reached the client.
	eventually(t, 5*time.Second, "the function's step span to end", func() bool {
		for _, s := range rec.Ended() {
			switch {
			case strings.HasPrefix(s.Name(), "step spans/main"):
				stepSpan = s.SpanContext()
			case strings.HasPrefix(s.Name(), "operation "):
				ops[s.Name()] = s
			}
		}
		return stepSpan.IsValid()
	})
	ask, fails := ops["operation /ask#0"], ops["operation /fails#0"]
	if ask == nil || fails == nil || ask.Parent().SpanID() != stepSpan.SpanID() {
		t.Fatalf("operation spans %v, the step span %v", ops, stepSpan)
	}
	if fails.Status().Code != codes.Error || !slices.ContainsFunc(fails.Attributes(), func(kv attribute.KeyValue) bool { return kv.Value.AsString() == "nope" }) {
		t.Fatalf("a failed step's span: %v %v", fails.Status(), fails.Attributes())
	}
}

// What an attempt consumed before it suspended counts: the suspending
// checkpoint carries its usage, as a complete does.
func TestFunctionUsageSurvivesASuspension(t *testing.T) {
	e := newEnv(t, fastReap())
	_, tp := recordSpans(t)
	wf := askingFunction("usage-nap", tp.Tracer("test"), func(fc *Durable, n int) (int, error) {
		return n, fc.Sleep("nap", inlineSleep+time.Second) // suspends; the next attempt ends the run
	})
	serve(t, NewWorker(e.c, WithLogger(quiet()), WithTracerProvider(tp)).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "usage-nap", StartOptions{}).ID, 30*time.Second)
	st := r.Step("main")
	if u := st.Usage; r.Status != RunCompleted || len(st.Attempts) != 2 || u.InputTokens != 30 || u.OutputTokens != 7 || r.Usage.InputTokens != 30 {
		t.Fatalf("run %s, %d attempts; step usage %+v, run usage %+v", r.Status, len(st.Attempts), u, r.Usage)
	}
	if a := st.Attempts[0]; a.Outcome != cairn.OutcomeSuspended || a.Usage == nil || a.Usage.InputTokens != 30 {
		t.Fatalf("the suspended attempt: %+v", a)
	}
}

// Race returns the branch that ends first and records it: a step against
// a sleep ends at once; a wait against a sleep suspends the function until
// the first of them (the event, or the sleep's end), and a replay runs
// only the winner.
func TestFunctionRace(t *testing.T) {
	e := newEnv(t, fastReap())
	var waits atomic.Int32
	wf := Function("racer", "1", func(fc *Durable, in struct{ Quick bool }) (string, error) {
		napping := func(fc *Durable) (string, error) { return "slept", fc.Sleep("nap", inlineSleep+time.Second) }
		if in.Quick {
			_, v, err := Race(fc, "quick", func(fc *Durable) (string, error) {
				return Step(fc, "fast", func(context.Context) (string, error) { return "fast", nil })
			}, napping)
			return v, err
		}
		i, v, err := Race(fc, "approval", func(fc *Durable) (string, error) {
			waits.Add(1)
			raw, err := fc.WaitEvent("ok", "approve", 0)
			return string(raw), err
		}, napping)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d %s", i, v), nil
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	quick := start(t, e.c, "racer", StartOptions{Input: map[string]bool{"quick": true}})
	approved := start(t, e.c, "racer", StartOptions{})
	timedOut := start(t, e.c, "racer", StartOptions{})
	if r := waitRun(t, e.c, quick.ID, 20*time.Second); string(r.Output) != `"fast"` || len(r.Step("main").Attempts) != 1 {
		t.Fatalf("a step against a sleep: %s %+v, attempts %+v", r.Output, r.Error, r.Step("main").Attempts)
	}
	awaitSuspended(t, e.c, approved.ID)
	if _, err := e.c.SendEvent(context.Background(), approved.ID, Event{Name: "approve", Payload: "yes"}); err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e.c, approved.ID, 20*time.Second); string(r.Output) != `"0 \"yes\""` {
		t.Fatalf("a wait that won: %s %+v", r.Output, r.Error)
	}
	r := waitRun(t, e.c, timedOut.ID, 20*time.Second)
	if string(r.Output) != `"1 slept"` {
		t.Fatalf("a sleep that won: %s %+v", r.Output, r.Error)
	}
	var winner string
	for _, op := range r.Step("main").Operations {
		if op.ID == "/approval#0" {
			winner = string(op.Result)
		}
	}
	if winner != "1" {
		t.Fatalf("the recorded winner %q; history %+v", winner, r.Step("main").Operations)
	}
}

// Branches of a Map under a concurrency limit that park inside a nested
// Parallel do not hold the barrier: a branch waiting for a slot is not
// running, so the function suspends once every started branch parks.
func TestFunctionNestedMapUnderALimitSuspends(t *testing.T) {
	e := newEnv(t, fastReap())
	wf := Function("nested", "1", func(fc *Durable, _ struct{}) (int, error) {
		out, err := Map(fc, "outer", []int{0, 1}, 1, func(fc *Durable, x int) (int, error) {
			if x >= 0 { // every item parks inside a nested Parallel
				err := fc.Parallel("inner", func(fc *Durable) error {
					return fc.Sleep("nap", inlineSleep+time.Second)
				})
				return 0, err
			}
			return Step(fc, "one", func(context.Context) (int, error) { return 1, nil })
		})
		if err != nil {
			return 0, err
		}
		return len(out), nil
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet()), WithDrainTimeout(time.Second)).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "nested", StartOptions{}).ID, 20*time.Second)
	if r.Status != RunCompleted {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
}

// An event payload stored by reference (over the inline size) reaches
// WaitEvent as its value.
func TestFunctionGetsALargeEventPayload(t *testing.T) {
	e := newEnv(t, fastReap())
	big := strings.Repeat("x", 100<<10)
	got := make(chan string, 1)
	wf := Function("bigev", "1", func(fc *Durable, _ struct{}) (int, error) {
		raw, err := fc.WaitEvent("w", "go", time.Minute)
		if err != nil {
			return 0, err
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			got <- "undecodable: " + string(raw[:min(len(raw), 120)])
			return 0, err
		}
		got <- "ok"
		return len(s), nil
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	run := start(t, e.c, "bigev", StartOptions{})
	awaitSuspended(t, e.c, run.ID)
	if _, err := e.c.SendEvent(context.Background(), run.ID, Event{Name: "go", Payload: big}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e.c, run.ID, 20*time.Second)
	t.Logf("body saw: %s", <-got)
	if r.Status != RunCompleted || string(r.Output) != fmt.Sprint(len(big)) {
		t.Fatalf("run %s %s %+v", r.Status, r.Output, r.Error)
	}
}

// Results too large for the run record (a step's, an invoked run's
// output) are stored by reference and reach the replay as their values.
func TestFunctionLargeResultsReplay(t *testing.T) {
	e := newEnv(t, fastReap())
	big := strings.Repeat("y", 100<<10)
	var bodies atomic.Int32
	child := Function("bigchild", "1", func(fc *Durable, _ struct{}) (string, error) { return big, nil })
	wf := Function("bigres", "1", func(fc *Durable, _ struct{}) (int, error) {
		bodies.Add(1)
		s, err := Step(fc, "make", func(context.Context) (string, error) { return big, nil })
		if err != nil {
			return 0, err
		}
		c, err := Invoke[string](fc, "child", Call{Workflow: "bigchild"})
		if err != nil {
			return 0, err
		}
		if err := fc.Sleep("nap", inlineSleep+time.Second); err != nil {
			return 0, err
		}
		if s != big || c != big {
			return 0, Fatal(fmt.Errorf("replayed %d and %d bytes, want %d", len(s), len(c), len(big)))
		}
		return len(s) + len(c), nil
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf, child))
	run := start(t, e.c, "bigres", StartOptions{})
	r := waitRun(t, e.c, run.ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.Output) != fmt.Sprint(2*len(big)) {
		t.Fatalf("run %s %s %+v", r.Status, r.Output, r.Error)
	}
	if n := bodies.Load(); n < 3 {
		t.Fatalf("the body ran %d times, want a replay after the invoke and after the sleep", n)
	}
}

// A step that finishes after the drain cut its function off keeps its
// result: the suspension's checkpoint carries it, and the at_most_once
// step is not failed as lost on the next attempt.
func TestDrainKeepsAFinishedStepsResult(t *testing.T) {
	var runs atomic.Int32
	r := drainMidway(t, "drained2", func(began chan<- struct{}) *WorkflowDef {
		return Function("drained2", "1", func(fc *Durable, _ struct{}) (string, error) {
			return Step(fc, "charge", func(ctx context.Context) (string, error) {
				runs.Add(1)
				if fc.Info().Attempt == 1 {
					began <- struct{}{}
					<-ctx.Done()
					<-time.After(50 * time.Millisecond) // it finishes its side effect anyway
				}
				return "charged", nil
			}, AtMostOnce())
		})
	})
	if r.Status != RunCompleted || string(r.Output) != `"charged"` {
		t.Fatalf("run %s %s %+v; charge ran %d times; history %+v", r.Status, r.Output, r.Error, runs.Load(), r.Step("main").Operations)
	}
}

// An invoked run that ends while another attempt of its function runs
// (a sibling's sleep resumed it) does not fail the function: the attempt
// whose history changed is fenced and the next one replays it.
func TestFunctionInvokedRunEndsWhileAnAttemptRuns(t *testing.T) {
	e := newEnv(t, fastReap())
	slow := Workflow("slowchild", "1").Task("work", Handle(func(sc StepContext, _ struct{}) (string, error) {
		return "child", busy(sc, 5*time.Second)
	}))
	wf := Function("inv", "1", func(fc *Durable, _ struct{}) (string, error) {
		var got string
		err := fc.Parallel("both",
			func(fc *Durable) (err error) {
				got, err = Invoke[string](fc, "call", Call{Workflow: "slowchild"})
				return err
			},
			func(fc *Durable) error {
				if err := fc.Sleep("nap", inlineSleep+time.Second); err != nil {
					return err
				}
				_, err := Step(fc, "after", func(ctx context.Context) (int, error) {
					return 1, busy(ctx, 4*time.Second) // the child ends meanwhile
				})
				return err
			})
		return got, err
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet()), WithConcurrency(4)).Register(wf, slow))
	r := waitRun(t, e.c, start(t, e.c, "inv", StartOptions{}).ID, 40*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"child"` {
		t.Fatalf("run %s %s %+v", r.Status, r.Output, r.Error)
	}
}

// busy is a body's work: d, or until ctx ends.
func busy(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// awaitSuspended waits until run's function suspended its first attempt.
func awaitSuspended(t *testing.T, c *Client, run string) {
	t.Helper()
	eventually(t, 10*time.Second, "run "+run+"'s function to suspend", func() bool {
		r, err := c.Get(context.Background(), run)
		return err == nil && len(r.Step("main").Attempts) > 0 && r.Step("main").Attempts[0].Outcome == cairn.OutcomeSuspended
	})
}
