package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Ctrl-C during `runs start --wait` stops the watching, not the run, and
// the message says so and how to follow it.
func TestWaitInterruptedSaysTheRunContinues(t *testing.T) {
	srv := slowServer(t)
	c := testClient(t, srv.URL)

	root := newRootCmd()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"--server", srv.URL, "runs", "start", "slow", "--wait"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Interrupt once the run shows its step running (or after 10 s:
		// the checks below then fail, showing the output).
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for bound := time.After(10 * time.Second); !strings.Contains(out.String(), "running"); {
			select {
			case <-tick.C:
				continue
			case <-bound:
			}
			break
		}
		cancel()
	}()
	err := root.ExecuteContext(ctx)
	m := runIDRE.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no run id in:\n%s", out.String())
	}
	id := m[1]
	if err == nil || !strings.Contains(err.Error(), "continues on the server") || !strings.Contains(err.Error(), "cairn runs watch "+id) {
		t.Fatalf("interrupted --wait: %v", err)
	}
	r, err := c.Get(context.Background(), id)
	if err != nil || r.Status != sdk.RunRunning {
		t.Fatalf("the run after the interrupt: %+v %v", r, err)
	}
}

// slowServer is a test server whose worker serves "slow": one step that
// runs until it is cancelled.
func slowServer(t *testing.T) *sdktest.Server {
	t.Helper()
	slow := sdk.Workflow("slow", "1").
		Task("s", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}))
	srv, _ := serving(t, sdktest.Options{}, []sdk.WorkerOption{sdk.WithDrainTimeout(100 * time.Millisecond)}, slow)
	return srv
}
