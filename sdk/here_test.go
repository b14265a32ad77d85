package sdk

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A script drives a two-step DAG to its end with no other worker, and
// its claims, scoped to its run, never take a step of another run of the
// same workflow.
func TestRunHereDrivesADAGAndTakesNoOtherRun(t *testing.T) {
	e := newEnv(t, fastReap())
	var otherRun atomic.Value
	otherRun.Store("")
	var strays atomic.Int32
	wf := Workflow("here-dag", "1").
		Task("double", Handle(func(ctx StepContext, in struct{ N int }) (int, error) {
			if ctx.Info().Run == otherRun.Load().(string) {
				strays.Add(1)
			}
			if otherRun.Load().(string) == "" {
				// Another run of the workflow, started while the script
				// claims: its steps are ready for any claim but a scoped one.
				other := start(t, e.c, "here-dag", StartOptions{Input: map[string]int{"n": 100}})
				otherRun.Store(other.ID)
			}
			return 2 * in.N, nil
		}), Input(map[string]any{"N": "${input.n}"})).
		Task("add", Handle(func(ctx StepContext, in struct{}) (int, error) {
			var d int
			if err := ctx.Output("double", &d); err != nil {
				return 0, err
			}
			return d + 1, nil
		}), After("double"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := RunHere(ctx, e.client(t), wf, StartOptions{Input: map[string]int{"n": 20}}, WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := r.Decode(&got); err != nil || r.Status != RunCompleted || got != 41 {
		t.Fatalf("run %s %+v: output %d, %v", r.Status, r.Error, got, err)
	}
	other := otherRun.Load().(string)
	if other == "" || r.ID == other {
		t.Fatalf("the other run %q, RunHere's %s", other, r.ID)
	}
	o, err := e.c.Get(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range o.Steps {
		if len(st.Attempts) != 0 || st.Holder != nil || (st.Status != StepReady && st.Status != StepPending) {
			t.Fatalf("the other run's step %s was touched: %+v", st.ID, st)
		}
	}
	if o.Status != RunRunning || strays.Load() != 0 {
		t.Fatalf("the other run is %s; its steps ran %d times here", o.Status, strays.Load())
	}
}

// A script drives a durable function through a sleep that suspends it,
// and a continue-as-new, alone: the result is the last run's output.
func TestRunHereDrivesAFunction(t *testing.T) {
	o := fastReap()
	// Claims scoped to a run look at it this often: the claim held on the
	// run that continued must not wait for that.
	o.Engine.FallbackInterval = 10 * time.Second
	e := newEnv(t, o)
	t0 := time.Now()
	var bodies atomic.Int32
	wf := Function("here-fn", "1", func(fc *Durable, n int) (int, error) {
		bodies.Add(1)
		v, err := Step(fc, "inc", func(ctx context.Context) (int, error) { return n + 1, nil })
		if err != nil {
			return 0, err
		}
		if err := fc.Sleep("rest", inlineSleep+500*time.Millisecond); err != nil {
			return 0, err
		}
		if v < 2 {
			return 0, ContinueAsNew(v)
		}
		return v * 10, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := RunHere(ctx, e.c, wf, StartOptions{Input: 0}, WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := r.Decode(&got); err != nil || r.Status != RunCompleted || got != 20 {
		t.Fatalf("run %s %+v: output %d, %v", r.Status, r.Error, got, err)
	}
	if r.ContinuedFrom == "" {
		t.Fatal("the run returned is not the one continued as")
	}
	if n := bodies.Load(); n != 4 { // two runs, each suspended once
		t.Fatalf("the body ran %d times; want 4", n)
	}
	t.Logf("two runs of two attempts each in %v", time.Since(t0))
}

// Cancelling the script's context stops serving and leaves the run
// running.
func TestRunHereStopsWithItsContext(t *testing.T) {
	e := newEnv(t, fastReap())
	held := closedAtEnd(t)
	began := make(chan struct{}, 1)
	wf := Workflow("here-stop", "1").Task("hold", Handle(func(ctx StepContext, in struct{}) (int, error) {
		began <- struct{}{}
		select {
		case <-held:
		case <-ctx.Done():
		}
		return 0, ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-began
		cancel()
	}()
	r, err := RunHere(ctx, e.c, wf, StartOptions{}, WithLogger(quiet()), WithDrainTimeout(100*time.Millisecond))
	if !errors.Is(err, context.Canceled) || r == nil || r.ID == "" {
		t.Fatalf("RunHere = %v, %v; want the run and context.Canceled", r, err)
	}
	got, err := e.c.Get(context.Background(), r.ID)
	if err != nil || got.Status != RunRunning {
		t.Fatalf("the run is %v after the script stopped (%v); want running", got.Status, err)
	}
}
