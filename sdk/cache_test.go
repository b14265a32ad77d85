package sdk

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestStepCache: a step with Cache runs once per key; a later run with
// the key takes its output without the handler, its step marked cached;
// invalidating the key (or the step) runs it again. A cache on a sleep
// step is refused when the workflow is built.
func TestStepCache(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	ctx := context.Background()
	var calls atomic.Int32
	type page struct {
		URL string `json:"url"`
	}
	wf := Workflow("fetch", "1").Task("get", Handle(func(_ StepContext, in page) (string, error) {
		return fmt.Sprintf("%s#%d", in.URL, calls.Add(1)), nil
	}), Cache("input.url", time.Hour))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	run := func() *Run {
		t.Helper()
		r := waitRun(t, e.c, start(t, e.c, "fetch", StartOptions{Input: page{URL: "u1"}}).ID, 30*time.Second)
		if r.Status != RunCompleted {
			t.Fatalf("run %s: %s %v", r.ID, r.Status, r.Error)
		}
		return r
	}
	// The entry is written just after the complete, so a run started at
	// once may miss it and compute (and write) its own: the runs that
	// computed are the ones a cached step may come from.
	computed := map[string]string{}
	var cached *Run
	eventually(t, 30*time.Second, "a run completed from the cache", func() bool {
		cached = run()
		if got := cached.Step("get"); got.Cached == nil {
			computed[cached.ID] = string(got.Output)
			return false
		}
		return true
	})
	if got := cached.Step("get"); computed[got.Cached.Run] == "" || string(got.Output) != computed[got.Cached.Run] {
		t.Fatalf("cached step %+v, want the output of a run that computed it (%v)", got, computed)
	}
	if n, err := e.c.InvalidateCacheKey(ctx, "fetch", "get", "u1"); err != nil || n != 1 {
		t.Fatalf("invalidate u1: %d %v", n, err)
	}
	if r := run(); r.Step("get").Cached != nil {
		t.Fatalf("after the invalidation the step was cached: %+v", r.Step("get"))
	}
	if _, err := e.c.InvalidateCache(ctx, "fetch", "get"); err != nil {
		t.Fatal(err)
	}
	if _, err := Workflow("bad", "1").Sleep("nap", time.Second, Cache("", 0)).Definition(); err == nil {
		t.Fatal("a cache on a sleep step was accepted")
	}
}
