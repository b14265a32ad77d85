package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestGoldenEvents: cairn events publish starts the triggered runs (two
// workflows, in name order), once per id (a retry answers the same runs),
// nothing for an event no trigger matches, and cancels the running runs a
// cancel_on matches; a payload that is not JSON is refused before any
// request. The transcript is a golden file; cairn runs get shows the event
// that started a run.
func TestGoldenEvents(t *testing.T) {
	welcome := sdk.Workflow("on-signup", "1").On("user.signed_up", "").
		Task("welcome", sdk.Handle(func(ctx sdk.StepContext, in map[string]any) (any, error) { return in["email"], nil }))
	nurture := sdk.Workflow("nurture", "1").On("user.signed_up", "").
		CancelOn("user.deleted", "event.payload.email == input.email", 0).
		Wait("wait-a-week", "never")
	srv, _ := serving(t, sdktest.Options{}, nil, welcome, nurture)
	n := &normalizer{ids: map[string]string{}}
	s := n.run(t, srv.URL, "events", "publish", "user.signed_up", "--payload", `{"email":"a@example.com"}`, "--id", "u1")
	s += n.run(t, srv.URL, "events", "publish", "user.signed_up", "--id", "u1")
	s += n.run(t, srv.URL, "events", "publish", "order.created", "--payload", `{"order":1}`)
	s += n.run(t, srv.URL, "events", "publish", "user.deleted", "--payload", `{"email":"b@example.com"}`, "--id", "d0")
	s += n.run(t, srv.URL, "events", "publish", "user.deleted", "--payload", `{"email":"a@example.com"}`, "--id", "d1")
	s += n.run(t, srv.URL, "events", "publish", "user.deleted", "--payload", `{"email":`)
	golden(t, "events", strings.ReplaceAll(s, "(id "+newIDOf(s)+")", "(id <new>)"))

	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	run := strings.Fields(strings.Split(mustCLI(t, srv.URL, "events", "publish", "user.signed_up", "--id", "u1"), "\n")[1])[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Wait(ctx, run); err != nil {
		t.Fatal(err)
	}
	if got := mustCLI(t, srv.URL, "runs", "get", run); !strings.Contains(got, "event     user.signed_up (id u1) started it") {
		t.Fatalf("runs get:\n%s", got)
	}
}

// newIDOf is the id the server made for the transcript's publish without
// --id (order.created).
func newIDOf(s string) string {
	_, rest, _ := strings.Cut(s, "event order.created (id ")
	id, _, _ := strings.Cut(rest, ")")
	return id
}
