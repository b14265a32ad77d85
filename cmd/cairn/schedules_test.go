package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/sdk"
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
