package main

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Every view counts a run's steps the same way: the declared steps (a
// map step once, whatever its items; compensation steps not at all).
// The run below maps 3 items, then fails, then compensates: 1 of its 2
// declared steps completed, "1/2" in --wait's end, get, list (table and
// JSON) and watch.
func TestStepCountsAgreeAcrossViews(t *testing.T) {
	srv, c := serving(t, sdktest.Options{}, nil, sagaWorkflow())

	out, err := cli(t, srv.URL, "runs", "start", "saga", "--input", "[1,2,3]", "--wait")
	if err == nil {
		t.Fatalf("the run did not fail:\n%s", out)
	}
	id := runIDRE.FindStringSubmatch(out)[1]
	testutil.Eventually(t, 10*time.Second, "the compensation to end", func() (bool, string) {
		r, err := c.Get(t.Context(), id)
		return err == nil && r.Compensation != nil && r.Compensation.Status != "running", out
	})
	counts := regexp.MustCompile(`\b\d+/\d+\b`)
	views := map[string]string{
		"--wait": out,
		"get":    mustCLI(t, srv.URL, "runs", "get", id),
		"list":   mustCLI(t, srv.URL, "runs", "list"),
		"watch":  func() string { o, _ := cli(t, srv.URL, "runs", "watch", id); return o }(),
	}
	for view, text := range views {
		for _, m := range counts.FindAllString(text, -1) {
			if m != "1/2" && !(view == "--wait" && m == "0/2") && !(view == "watch" && m == "0/2") {
				t.Errorf("%s counts %s, want 1/2 (or 0/2 before the map completed):\n%s", view, m, text)
			}
		}
	}
	if !strings.Contains(views["--wait"], "(1/2 steps)") || !strings.Contains(views["get"], "(1/2 steps)") {
		t.Errorf("--wait or get lacks (1/2 steps):\n%s\n%s", views["--wait"], views["get"])
	}
	var page struct{ Runs []sdk.RunSummary }
	if err := json.Unmarshal([]byte(mustCLI(t, srv.URL, "runs", "list", "-o", "json")), &page); err != nil || len(page.Runs) != 1 ||
		page.Runs[0].StepsDone != 1 || page.Runs[0].StepsTotal != 2 {
		t.Errorf("runs list -o json: %v %+v", err, page.Runs)
	}
}

// sagaWorkflow is "saga": a map step doubling the input's items, then a
// step that fails for good, then a compensation step. Of its 2 declared
// steps, 1 completes.
func sagaWorkflow() *sdk.WorkflowDef {
	return sdk.Workflow("saga", "1").
		Map("each", "${input}", sdk.Handle(func(ctx sdk.StepContext, n int) (int, error) { return n * 2, nil })).
		Task("boom", sdk.Handle(func(ctx sdk.StepContext, _ json.RawMessage) (string, error) {
			return "", sdk.Fatal(errors.New("boom"))
		}), sdk.After("each")).
		OnFailure("undo", sdk.Handle(func(ctx sdk.StepContext, _ json.RawMessage) (string, error) { return "undone", nil }))
}

// skewedSteps serves "steps", two steps of 300ms one after the other
// (time a live status line shows), on a server whose clock is skew ahead
// of the client's.
func skewedSteps(t *testing.T, skew time.Duration) *sdktest.Server {
	t.Helper()
	step := func(ctx sdk.StepContext, in string) (string, error) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
		return in, nil
	}
	wf := sdk.Workflow("steps", "1").
		Task("a", sdk.Handle(step)).
		Task("b", sdk.Handle(step), sdk.After("a"), sdk.Input("${steps.a.output}"))
	srv, _ := serving(t, sdktest.Options{Engine: engine.Config{
		Now: func() time.Time { return time.Now().Add(skew) },
	}}, nil, wf)
	return srv
}
