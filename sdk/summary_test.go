package sdk

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A body's summary reaches its attempt, on a failure and on a success; one
// over the limit is an error the body sees, and nothing is sent for it.
func TestStepSummaries(t *testing.T) {
	e := newEnv(t, fastReap())
	wf := Workflow("summarise", "1").Task("fetch", Handle(func(ctx StepContext, _ struct{}) (int, error) {
		if err := ctx.SetSummary(strings.Repeat("x", 5000)); err == nil {
			return 0, errors.New("a 5,000-byte summary was taken")
		}
		if ctx.Info().Attempt == 1 {
			if err := ctx.SetSummary(map[string]any{"pages": 2, "stopped": "rate limit"}); err != nil {
				return 0, err
			}
			return 0, Retryable(errors.New("rate limited"))
		}
		return 3, ctx.SetSummary("fetched 3 pages")
	}), Retry(RetryPolicy{MaxAttempts: 2, InitialBackoff: 10 * time.Millisecond}))
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "summarise", StartOptions{}).ID, 30*time.Second)
	var a []Attempt
	for _, s := range r.Steps {
		if s.ID == "fetch" {
			a = s.Attempts
		}
	}
	if r.Status != RunCompleted || len(a) != 2 || string(a[0].Summary) != `{"pages":2,"stopped":"rate limit"}` || string(a[1].Summary) != `"fetched 3 pages"` {
		t.Fatalf("run %s %+v attempts %+v", r.Status, r.Error, a)
	}
}
