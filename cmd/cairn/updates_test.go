package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestGoldenUpdate: `runs update` prints an update taken but not yet
// answered, then (sent again with its id, --wait) its answer, as JSON
// too; an update no wait is left for, or to an ended run, is an error.
func TestGoldenUpdate(t *testing.T) {
	decide := make(gate)
	wf := sdk.Workflow("review", "1").
		Wait("approve", "approve", sdk.Answer("decide")).
		Task("decide", sdk.Handle(func(ctx sdk.StepContext, in struct {
			By string `json:"by"`
		}) (map[string]string, error) {
			if err := decide.wait(ctx); err != nil {
				return nil, err
			}
			return map[string]string{"approved_by": in.By}, nil
		}), sdk.After("approve"), sdk.Input(map[string]any{"by": "${steps.approve.output.by}"}))
	srv, c := serving(t, sdktest.Options{}, nil, wf)
	n := &normalizer{ids: map[string]string{}}
	runs := startRuns(t, c, "review", 2)
	run := runs[0]
	var out []string
	out = append(out, n.run(t, srv.URL, "runs", "update", run, "approve", "--input", `{"by":"ana"}`, "--id", "u1"))
	out = append(out, n.run(t, srv.URL, "runs", "update", runs[1], "aprove"))
	decide <- struct{}{}
	out = append(out, n.run(t, srv.URL, "runs", "update", run, "approve", "--input", `{"by":"ana"}`, "--id", "u1", "--wait"))
	waitRunEnded(t, c, run)
	out = append(out, n.run(t, srv.URL, "runs", "update", run, "approve", "--input", `{"by":"ana"}`, "--id", "u1", "--json"))
	out = append(out, n.run(t, srv.URL, "runs", "update", run, "approve", "--id", "u2"))
	golden(t, "runs_update", strings.Join(out, ""))
}

// waitRunEnded waits (bounded by the server's hold) until run ended.
func waitRunEnded(t *testing.T, c *sdk.Client, run string) {
	t.Helper()
	r, err := c.Wait(context.Background(), run)
	if err != nil || !r.Status.Terminal() {
		t.Fatalf("run %s did not end: %+v %v", run, r, err)
	}
}
