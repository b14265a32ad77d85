package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// An update to a DAG's wait is answered by the step its Answer names, in
// the call that sends it when the call holds long enough; sent again
// with its id it is the same update; no wait left for it is a 422.
func TestSendUpdateToAWait(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	wf := Workflow("approval", "1").
		Wait("approve", "approve", Answer("decide")).
		Task("decide", Handle(func(ctx StepContext, in struct {
			By string `json:"by"`
		}) (string, error) {
			return "approved by " + in.By, nil
		}), After("approve"), Input(map[string]any{"by": "${steps.approve.output.by}"}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	ctx := context.Background()
	run := start(t, e.c, "approval", StartOptions{})
	u, err := e.c.SendUpdate(ctx, run.ID, "approve", map[string]string{"by": "ann"}, UpdateOptions{ID: "u1", Wait: 20 * time.Second})
	if err != nil || u.Status != UpdateAnswered || string(u.Answer) != `"approved by ann"` || u.Step != "approve" {
		t.Fatalf("update: %+v %v", u, err)
	}
	again, err := e.c.GetUpdate(ctx, run.ID, "u1", 0)
	if err != nil || string(again.Answer) != `"approved by ann"` {
		t.Fatalf("polled: %+v %v", again, err)
	}
	_, err = e.c.SendUpdate(ctx, run.ID, "approve", nil, UpdateOptions{})
	var pe *APIError
	if !errors.As(err, &pe) || pe.Status != 422 && pe.Status != 409 {
		t.Fatalf("an update no wait is left for: %v", err)
	}
}

// A durable function waits for an update and replies; the sender gets
// the reply.
func TestFunctionRepliesToAnUpdate(t *testing.T) {
	e := newEnv(t, fastReap())
	wf := Function("asker", "1", func(fc *Durable, _ struct{}) (string, error) {
		u, err := fc.WaitUpdate("question", "ask", time.Minute)
		if err != nil {
			return "", err
		}
		var q string
		if err := json.Unmarshal(u.Input, &q); err != nil {
			return "", err
		}
		if err := fc.Reply(u, "you asked "+q); err != nil {
			return "", err
		}
		return "answered " + u.ID, nil
	})
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	run := start(t, e.c, "asker", StartOptions{})
	awaitSuspended(t, e.c, run.ID)
	u, err := e.c.SendUpdate(context.Background(), run.ID, "ask", "why", UpdateOptions{ID: "q1", Wait: 20 * time.Second})
	if err != nil || u.Status != UpdateAnswered || string(u.Answer) != `"you asked why"` {
		t.Fatalf("update: %+v %v", u, err)
	}
	if r := waitRun(t, e.c, run.ID, 30*time.Second); r.Status != RunCompleted || string(r.Output) != `"answered q1"` {
		t.Fatalf("run %s %s %+v", r.Status, r.Output, r.Error)
	}
}
