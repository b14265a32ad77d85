// Package quickstart tests the TypeScript quickstart as docs/SDK-TS.md
// documents it, on a fresh clone of the repository: `npm install && npm
// start` in examples/ts, then the documented run.
package quickstart

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// A fresh clone has no sdk/ts/dist and no node_modules: the example's
// npm install builds the SDK it depends on (file:../../sdk/ts), and its
// worker then serves the triage run. npm runs offline, from the cache the
// test setup filled (make ts-deps installs the same packages): tests
// download nothing.
func TestTypeScriptQuickstartOnAFreshClone(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and builds the TypeScript SDK and example")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no npm on CI")
		}
		t.Skip("no npm")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "cairn")
	if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	dir := filepath.Join(clone, "examples", "ts")
	env := append(os.Environ(), "npm_config_offline=true", "npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false")

	install := exec.Command(npm, "install")
	install.Dir, install.Env = dir, env
	start := time.Now()
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install in a fresh clone's examples/ts: %v\n%s", err, out)
	}
	t.Logf("npm install (the SDK built by it): %v", time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(clone, "sdk", "ts", "dist", "index.js")); err != nil {
		t.Fatalf("npm install did not build the SDK: %v", err)
	}

	srv := sdktest.Start(t, sdktest.Options{})
	worker := exec.Command(npm, "start")
	worker.Dir, worker.Env = dir, append(env, "CAIRN_SERVER="+srv.URL)
	worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var log testutil.SyncBuffer
	worker.Stdout, worker.Stderr = &log, &log
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- worker.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-worker.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-worker.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	testutil.Eventually(t, 90*time.Second, "npm start's worker to register", func() (bool, string) {
		select {
		case err := <-exited:
			t.Fatalf("npm start exited: %v\n%s", err, log.String())
		default:
		}
		return strings.Contains(log.String(), `"worker registered"`), lastLine(log.String())
	})

	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// cairn runs start triage --wait --input '…' (docs/SDK-TS.md)
	run, err := c.Start(ctx, "triage", sdk.StartOptions{Input: json.RawMessage(`{"subject":"Charged twice","body":"URGENT: I was charged twice","customer":"ana@bigcorp.com"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var reply struct{ Queue, Text string }
	if reply, err = sdk.Result[struct{ Queue, Text string }](ctx, c, run.ID); err != nil {
		t.Fatalf("the triage run: %v\nworker:\n%s", err, log.String())
	}
	if reply.Queue != "billing-priority" || !strings.Contains(reply.Text, "Hi ana@bigcorp.com,") {
		t.Fatalf("reply %+v", reply)
	}
}

func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		last = sc.Text()
	}
	return last
}
