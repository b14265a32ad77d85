package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestMain runs the command line itself (main, with the process's
// arguments) when CAIRN_TEST_MAIN=1: the tests of exit statuses and
// signals run this test binary as cairn.
func TestMain(m *testing.M) {
	if os.Getenv("CAIRN_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// mainProcess is the command line args run as a process of its own.
func mainProcess(args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CAIRN_TEST_MAIN=1")
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return cmd, &out, &errOut
}

// --server takes host:port as http://host:port, as $CAIRN_SERVER does.
func TestServerHostPort(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	out := mustCLI(t, hostPort, "workers")
	if !strings.Contains(out, "no workers registered") {
		t.Fatalf("--server %s workers: %s", hostPort, out)
	}
	t.Setenv("CAIRN_SERVER", hostPort)
	root := newRootCmd()
	var b bytes.Buffer
	root.SetOut(&b)
	root.SetArgs([]string{"workers"})
	if err := root.Execute(); err != nil || !strings.Contains(b.String(), "no workers registered") {
		t.Fatalf("CAIRN_SERVER=%s cairn workers: %v %s", hostPort, err, b.String())
	}
}

// An error is printed with the "cairn: " prefix once, whoever said
// "cairn: " first, and the process exits 1.
func TestErrorPrefixedOnce(t *testing.T) {
	if got := errorLine(errors.New("cairn: server \"x\" is bad")); got != `cairn: server "x" is bad` {
		t.Errorf("errorLine: %q", got)
	}
	cmd, _, errOut := mainProcess("--server", "ftp://127.0.0.1:1", "workers")
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("a refused --server: %v, want exit status 1", err)
	}
	if line := strings.TrimSpace(errOut.String()); !strings.HasPrefix(line, "cairn: --server ") || strings.Count(line, "cairn:") != 1 {
		t.Fatalf("a refused --server said %q", line)
	}
}

// Ctrl-C during runs start --wait exits 130 (128+SIGINT), as a shell
// reports a command Ctrl-C stopped; a SIGTERM 143. A command Ctrl-C ends
// as it should (a server draining) exits 0: see exitStatus.
func TestInterruptedWaitExits130(t *testing.T) {
	srv := slowServer(t)

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, out, errOut := mainProcess("--server", srv.URL, "runs", "start", "slow", "--wait")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 20*time.Second, "the step running", func() (bool, string) {
			return strings.Contains(out.String(), "running"), out.String() + errOut.String()
		})
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
			t.Fatalf("%v during --wait: %v, want exit status %d\n%s", sig, err, 128+int(sig), errOut.String())
		}
		if line := errOut.String(); !strings.HasPrefix(line, "cairn: stopped watching; run ") || strings.Count(line, "cairn:") != 1 {
			t.Errorf("%v during --wait said %q", sig, line)
		}
	}
	if got := exitStatus(nil, syscall.SIGINT); got != 0 {
		t.Errorf("a command that ended well after Ctrl-C: exit %d, want 0", got)
	}
	if got := exitStatus(errors.New("x"), nil); got != 1 {
		t.Errorf("a failed command: exit %d, want 1", got)
	}
}
