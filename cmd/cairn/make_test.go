package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
)

// fakeGo stands in for go in the Makefile's recipes: `go build -o OUT
// PKG` writes to OUT a program that runs until Ctrl-C and then exits
// with $FAKE_EXIT (0 as cairn dev does after draining, or 130); `go run`
// runs that program and exits 1 when it was interrupted, as go run does.
const fakeGo = `#!/bin/sh
prog='trap "exit ${FAKE_EXIT:-0}" INT; echo ready; while :; do sleep 0.05; done'
case "$1" in
build) printf '#!/bin/sh\n%s\n' "$prog" > "$3"; chmod +x "$3" ;;
run) trap 'exit 1' INT; sh -c "$prog"; exit 1 ;;
*) exit 2 ;;
esac
`

// Ctrl-C ends make run and make up without make reporting the recipe as
// failed: no "make: *** [Makefile:N: run] Error 1" or "… Interrupt",
// whether the program exits 0 or 130 after the Ctrl-C. Make runs in a
// process group of its own, which gets the SIGINT, as a terminal sends it
// to its foreground group. GNU make itself, signalled at the same instant
// as its child, now and then loses the race to reap it and says "wait: No
// child processes" — its own message about its own signal, which no
// recipe can prevent; what the recipe decides is whether make calls it an
// error.
func TestMakeEndsQuietlyOnCtrlC(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no make on CI")
		}
		t.Skip("no make")
	}
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	if err := os.WriteFile(goBin, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"run", "up"} {
		for _, status := range []string{"0", "130"} {
			cmd := exec.Command("make", "--no-print-directory", target, "GO="+goBin, "BIN="+dir)
			cmd.Dir = filepath.Join("..", "..")
			cmd.Env = append(withoutMake(os.Environ()), "FAKE_EXIT="+status)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 20*time.Second, "make "+target+" to run its program", func() (bool, string) {
				return strings.Contains(out.String(), "ready"), out.String()
			})
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			cmd.Wait()
			if got := out.String(); strings.Contains(got, "] Error ") || strings.Contains(got, "] Interrupt") {
				t.Errorf("make %s, its program exiting %s after Ctrl-C, did not end quietly:\n%s", target, status, out.String())
			}
		}
	}
}

// withoutMake drops what a calling make passes its children (the test may
// run under `make test`): the make under test runs as a user's would, not
// as a sub-make sharing a jobserver.
func withoutMake(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") {
			out = append(out, kv)
		}
	}
	return out
}
