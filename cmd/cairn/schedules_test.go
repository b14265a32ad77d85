package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

func TestSchedulesCommands(t *testing.T) {
	srv, _ := startServed(t)
	out := mustCLI(t, srv.URL, "schedules", "create", "gate", "*/5 * * * *", "--id", "gate5", "--tz", "Europe/Paris", "--input", `{"x":1}`, "--overlap", "allow")
	if !strings.Contains(out, `schedule gate5: gate "*/5 * * * *" (Europe/Paris), overlap allow, next 20`) {
		t.Fatalf("create: %s", out)
	}
	if _, err := cli(t, srv.URL, "schedules", "create", "gate", "bad cron"); err == nil || !strings.Contains(err.Error(), "cron") {
		t.Fatalf("bad cron: %v", err)
	}
	out = mustCLI(t, srv.URL, "schedules", "list")
	if !strings.Contains(out, "SCHEDULE") || !strings.Contains(out, "gate5") {
		t.Fatalf("list: %s", out)
	}
	if out = mustCLI(t, srv.URL, "schedules", "pause", "gate5"); !strings.Contains(out, "next paused") {
		t.Fatalf("pause: %s", out)
	}
	if out = mustCLI(t, srv.URL, "schedules", "resume", "gate5"); strings.Contains(out, "next paused") {
		t.Fatalf("resume: %s", out)
	}
	out = mustCLI(t, srv.URL, "schedules", "backfill", "gate5", "--since", "20m", "--json")
	var b sdk.BackfillResult
	if err := json.Unmarshal([]byte(out), &b); err != nil || len(b.Ticks) < 3 || len(b.Ticks) > 4 {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	run := b.Ticks[0].Run
	if _, err := cli(t, srv.URL, "runs", "delete", run); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("delete a waiting run: %v", err)
	}
	if out = mustCLI(t, srv.URL, "runs", "delete", run, "--force"); !strings.Contains(out, "deleted run "+run) {
		t.Fatalf("delete --force: %s", out)
	}
	if _, err := cli(t, srv.URL, "runs", "get", run); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("get a deleted run: %v", err)
	}
	mustCLI(t, srv.URL, "schedules", "get", "gate5")
	mustCLI(t, srv.URL, "schedules", "delete", "gate5")
	if out = mustCLI(t, srv.URL, "schedules", "list"); !strings.Contains(out, "no schedules") {
		t.Fatalf("list after delete: %s", out)
	}
}

// A schedule whose tick could not start a run says so in `schedules list`:
// its failure count and its last error (the workflow version it names is
// gone, as the dashboard's test arranges too).
func TestSchedulesListShowsAFailedTick(t *testing.T) {
	var skew atomic.Int64
	srv, _ := serving(t, sdktest.Options{Engine: engine.Config{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}}, nil,
		sdk.Workflow("orders", "1").Task("charge", sdk.Handle(func(sdk.StepContext, struct{}) (struct{}, error) { return struct{}{}, nil })))
	mustCLI(t, srv.URL, "schedules", "create", "orders", "* * * * *", "--id", "minutely", "--version", "1")
	ctx := context.Background()
	o, err := srv.Store.Get(ctx, "schedules/minutely")
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(o.Data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["version"] = "9" // no API removes a version: the record names one there is not
	data, _ := json.Marshal(rec)
	if _, err := srv.Store.Swap(ctx, "schedules/minutely", data, o.Version); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(2 * time.Minute))
	var out string
	testutil.Eventually(t, 30*time.Second, "schedules list to show the failed tick", func() (bool, string) {
		out = mustCLI(t, srv.URL, "schedules", "list")
		return strings.Contains(out, "orders@9"), out
	})
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "FAILED") || !strings.Contains(lines[0], "LAST ERROR") || !strings.Contains(lines[1], " 1 ") {
		t.Fatalf("schedules list:\n%s", out)
	}
}
