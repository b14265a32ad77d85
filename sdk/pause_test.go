package sdk

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestPauseAndResume: a run paused while its first step runs lets that
// step complete, starts the next only at its resume, and then completes;
// Wait follows it through the pause. Pausing the ended run is a 409.
func TestPauseAndResume(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	began, release := make(chan struct{}), make(chan struct{})
	wf := Workflow("pausable", "1").
		Task("first", Handle(func(StepContext, struct{}) (int, error) {
			close(began)
			<-release
			return 1, nil
		})).
		Task("second", Handle(func(StepContext, struct{}) (int, error) { return 2, nil }), After("first"))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	run := start(t, e.c, "pausable", StartOptions{})
	<-began
	if r, err := e.c.Pause(ctx, run.ID); err != nil || r.Status != RunPaused {
		t.Fatalf("pause: %v %v", r, err)
	}
	close(release)
	eventually(t, 30*time.Second, "the first step's complete applied", func() bool {
		r, err := e.c.Get(ctx, run.ID)
		return err == nil && r.Step("first").Status == StepCompleted
	})
	if r, _ := e.c.Get(ctx, run.ID); r.Status != RunPaused || r.Step("second").Status != StepPending {
		t.Fatalf("after the first step: run %s, second %s", r.Status, r.Step("second").Status)
	}
	if r, err := e.c.Resume(ctx, run.ID); err != nil || r.Status != RunRunning {
		t.Fatalf("resume: %v %v", r, err)
	}
	if r := waitRun(t, e.c, run.ID, 30*time.Second); r.Status != RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
	if _, err := e.c.Pause(ctx, run.ID); !IsConflict(err) {
		t.Fatalf("pause of an ended run: %v, want a conflict", err)
	}
}
