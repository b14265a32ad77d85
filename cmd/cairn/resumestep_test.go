package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// approvalServer serves a workflow whose step asks for approval by
// interrupting until it is resumed, and completes with the answer.
func approvalServer(t *testing.T) (*sdktest.Server, *sdk.Client) {
	t.Helper()
	wf := sdk.Workflow("approval", "1").
		Task("review", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (any, error) {
			var answer any
			if ok, err := ctx.Resumed(&answer); err != nil || !ok {
				return nil, sdk.Interrupt(map[string]string{"question": "ship it?"})
			}
			return answer, nil
		}))
	return serving(t, sdktest.Options{}, nil, wf)
}

// runs get shows an interrupted step and its payload; runs resume-step
// answers it, and the run completes with the answer; resuming again with
// another value is refused.
func TestRunsResumeStep(t *testing.T) {
	srv, c := approvalServer(t)
	out := mustCLI(t, srv.URL, "runs", "start", "approval")
	run := runIDRE.FindStringSubmatch(out)[1]
	testutil.Eventually(t, 20*time.Second, "runs get shows the step interrupted with its payload", func() (bool, string) {
		got := mustCLI(t, srv.URL, "runs", "get", run)
		return strings.Contains(got, "interrupted: waiting for input") && strings.Contains(got, `"ship it?"`), got
	})
	if got := mustCLI(t, srv.URL, "runs", "resume-step", run, "review", "--value", `{"approved":true}`); !strings.Contains(got, "resumed step review of run "+run) {
		t.Fatalf("resume-step: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := c.Wait(ctx, run)
	if err != nil || r.Status != cairn.RunCompleted || string(r.Output) != `{"approved":true}` {
		t.Fatalf("run after the resume: %v %v", r, err)
	}
	if out, err := cli(t, srv.URL, "runs", "resume-step", run, "review", "--value", "false"); err == nil {
		t.Fatalf("resume-step of an ended run succeeded: %s", out)
	}
}
