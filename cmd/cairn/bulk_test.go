package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

func TestBatchesCommands(t *testing.T) {
	srv, c := startServed(t)
	ctx := context.Background()
	runs := startRuns(t, c, "gate", 3)
	if _, err := cli(t, srv.URL, "batches", "cancel"); err == nil || !strings.Contains(err.Error(), "filter") {
		t.Fatalf("no filter: %v", err)
	}
	if _, err := cli(t, srv.URL, "batches", "cancel", "--workflow", "gate", "--started-after", "yesterday"); err == nil || !strings.Contains(err.Error(), "--started-after") {
		t.Fatalf("bad time: %v", err)
	}
	out := mustCLI(t, srv.URL, "batches", "pause", "--workflow", "gate", "--status", "running", "--wait")
	if !strings.Contains(out, "pause, done: scanned 3, matched 3, applied 3") {
		t.Fatalf("pause: %s", out)
	}
	out = mustCLI(t, srv.URL, "batches", "resume", "--workflow", "gate", "--status", "paused", "--wait")
	if !strings.Contains(out, "resume, done: scanned 3, matched 3, applied 3") {
		t.Fatalf("resume: %s", out)
	}
	out = mustCLI(t, srv.URL, "batches", "cancel", "--workflow", "gate", "--status", "running", "--reason", "cli test", "--wait")
	if !strings.Contains(out, "cancel, done: scanned 3, matched 3, applied 3") {
		t.Fatalf("cancel: %s", out)
	}
	id := strings.TrimSuffix(strings.Fields(out)[1], ":")
	out = mustCLI(t, srv.URL, "batches", "get", id, "--json")
	var b sdk.Batch
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.ID != id || !b.Done() || b.Reason != "cli test" {
		t.Fatalf("get: %v %s", err, out)
	}
	for _, r := range runs {
		got, err := c.Get(ctx, r)
		if err != nil || got.Status != cairn.RunCancelled {
			t.Fatalf("run %s: %v %v", r, got.Status, err)
		}
	}
	out = mustCLI(t, srv.URL, "batches", "rerun", "--workflow", "gate", "--status", "cancelled", "--wait")
	if !strings.Contains(out, "rerun, done: scanned 3, matched 3, applied 3") {
		t.Fatalf("rerun: %s", out)
	}
}
