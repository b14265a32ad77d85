package main

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestEventsPublish: cairn events publish starts the triggered runs, once
// per id, and cairn runs get shows the event that started one.
func TestEventsPublish(t *testing.T) {
	wf := sdk.Workflow("on-signup", "1").On("user.signed_up", "").
		Task("welcome", sdk.Handle(func(ctx sdk.StepContext, in map[string]any) (any, error) { return in["email"], nil }))
	srv, _ := serving(t, sdktest.Options{}, nil, wf)
	out := mustCLI(t, srv.URL, "events", "publish", "user.signed_up", "--payload", `{"email":"a@example.com"}`, "--id", "u1")
	if !strings.Contains(out, "event user.signed_up (id u1): 1 run(s)") || !strings.Contains(out, "on-signup@1") || !strings.Contains(out, "started") {
		t.Fatalf("publish:\n%s", out)
	}
	run := strings.Fields(strings.Split(out, "\n")[1])[1]
	if again := mustCLI(t, srv.URL, "events", "publish", "user.signed_up", "--id", "u1"); !strings.Contains(again, run+"  already started by this id") {
		t.Fatalf("a retried publish:\n%s", again)
	}
	if got := mustCLI(t, srv.URL, "runs", "get", run); !strings.Contains(got, "event     user.signed_up (id u1) started it") {
		t.Fatalf("runs get:\n%s", got)
	}
}
