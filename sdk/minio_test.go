package sdk

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/storetest"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestWorkerOnMinIO drives a workflow with a retrying step, a state patch
// and a fan-in to completion through the API on MinIO.
func TestWorkerOnMinIO(t *testing.T) {
	e := newEnv(t, sdktest.Options{Store: storetest.MinIO(t)})
	var tries atomic.Int32
	wf := Workflow("minio-e2e", "1").
		Task("fetch", Handle(func(ctx StepContext, in map[string]any) (map[string]any, error) {
			if tries.Add(1) < 2 {
				return nil, Retryable(errors.New("store warming up"))
			}
			ctx.SetStatePatch(map[string]any{"fetched": true})
			return map[string]any{"n": in["n"]}, nil
		}), Retry(RetryPolicy{MaxAttempts: 3, InitialBackoff: 50 * time.Millisecond})).
		Task("left", Handle(func(ctx StepContext, in map[string]any) (int, error) { return 1, nil }), After("fetch")).
		Task("right", Handle(func(ctx StepContext, in map[string]any) (int, error) { return 2, nil }), After("fetch")).
		Task("sum", Handle(func(ctx StepContext, in map[string]any) (int, error) {
			var l, r int
			if err := ctx.Output("left", &l); err != nil {
				return 0, err
			}
			if err := ctx.Output("right", &r); err != nil {
				return 0, err
			}
			return l + r, nil
		}), After("left", "right"))
	w := NewWorker(e.c, WithName("w-minio"), WithConcurrency(4), WithLogger(quiet())).Register(wf)
	serve(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := e.c.Start(ctx, "minio-e2e", StartOptions{Input: map[string]any{"n": 7}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Result[int](ctx, e.c, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.c.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum != 3 || string(r.State["fetched"]) != "true" || tries.Load() != 2 {
		t.Fatalf("sum %d, state %v, tries %d", sum, r.State, tries.Load())
	}
}
