package main

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// cairn runs rerun: a failed run is rerun from a step, and the output says
// which run it reran and how many steps it reused.
func TestRunsRerun(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	startWorker(t, srv.URL)
	out, err := cli(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"boom"}`, "--wait")
	if err == nil {
		t.Fatalf("a failing run exited 0:\n%s", out)
	}
	m := runIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in %q", out)
	}
	old := m[1]
	out = mustCLI(t, srv.URL, "runs", "rerun", old)
	if !strings.Contains(out, "rerun of "+old) || !strings.Contains(out, "1/2 steps reused") {
		t.Fatalf("rerun said %q", out)
	}
	// From the first step, nothing is reused: it fails the same way.
	out, err = cli(t, srv.URL, "runs", "rerun", old, "--from", "shout", "--wait")
	if err == nil || !strings.Contains(out, "rerun of "+old) || !strings.Contains(out, "cannot greet BOOM") {
		t.Fatalf("rerun --from shout --wait: %v\n%s", err, out)
	}
	if _, err := cli(t, srv.URL, "runs", "rerun", old, "--from", "nope"); err == nil || !strings.Contains(err.Error(), "from_step") {
		t.Fatalf("unknown step: %v", err)
	}
}
