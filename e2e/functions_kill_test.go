package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/internal/testinfra"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
)

const (
	fnWorkerEnv = "CAIRN_E2E_FN_WORKER" // the API base URL: run as the function worker
	fnNotesEnv  = "CAIRN_E2E_FN_NOTES"  // the file its step bodies note their starts in
)

// fnKill is the function the kill test runs: a quick step, a slow one, a
// sleep that suspends it, and a map of slow steps. Each step body notes
// its start in a file, so the test counts how often each ran.
func fnKill(notes string) *sdk.WorkflowDef {
	note := func(what string) {
		f, err := os.OpenFile(notes, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintln(f, what)
			f.Close()
		}
	}
	slow := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(1500 * time.Millisecond):
			return nil
		}
	}
	return sdk.Function("fn-kill", "1", func(fc *sdk.Durable, _ struct{}) (int, error) {
		a, err := sdk.Step(fc, "a", func(context.Context) (int, error) { note("a"); return 1, nil })
		if err != nil {
			return 0, err
		}
		b, err := sdk.Step(fc, "b", func(ctx context.Context) (int, error) { note("b"); return 2, slow(ctx) })
		if err != nil {
			return 0, err
		}
		if err := fc.Sleep("nap", 4*time.Second); err != nil {
			return 0, err
		}
		sq, err := sdk.Map(fc, "m", []int{1, 2, 3, 4}, 4, func(fc *sdk.Durable, x int) (int, error) {
			return sdk.Step(fc, "sq", func(ctx context.Context) (int, error) { note(fmt.Sprint("m", x)); return x * x, slow(ctx) })
		})
		sum := a + b
		for _, v := range sq {
			sum += v
		}
		return sum, err
	})
}

// fnWorker is the worker process of the kill test: it serves fn-kill
// until killed, and prints "ready" once registered.
func fnWorker() int {
	c, err := sdk.NewClient(strings.TrimSuffix(os.Getenv(fnWorkerEnv), "/v1/api"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := sdk.NewWorker(c, sdk.WithConcurrency(4)).Register(fnKill(os.Getenv(fnNotesEnv)))
	go func() {
		<-w.Ready()
		fmt.Println("ready")
	}()
	if err := w.Serve(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestFunctionSurvivesKilledWorkers: kill -9 the worker of a durable
// function mid-step, mid-sleep and mid-map, each time starting another:
// the run completes, no step that completed before a kill runs again, and
// the history holds every operation once.
func TestFunctionSurvivesKilledWorkers(t *testing.T) {
	bin := buildCairn(t)
	for _, store := range []string{"file", "minio"} {
		t.Run(store, func(t *testing.T) {
			var base string
			switch store {
			case "file":
				addr := testinfra.FreeAddr(t)
				start(t, bin, []string{"CAIRN_LEASE_TTL=2s"}, "dev", "--addr", addr, "--dir", t.TempDir(), "--reap-every", "250ms")
				base = "http://" + addr + "/v1/api"
				waitHealthy(t, base)
			case "minio":
				base = newCluster(t).a
			}
			notes := filepath.Join(t.TempDir(), "notes")
			worker := func() *exec.Cmd {
				exe, _ := os.Executable()
				cmd := exec.Command(exe)
				cmd.Env = append(os.Environ(), fnWorkerEnv+"="+base, fnNotesEnv+"="+notes)
				out, _ := cmd.StdoutPipe()
				var logs testutil.SyncBuffer
				cmd.Stderr = &logs
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					cmd.Process.Kill()
					cmd.Wait()
					if t.Failed() {
						t.Logf("worker %d:\n%s", cmd.Process.Pid, tail(logs.String(), 3000))
					}
				})
				if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
					werr := cmd.Wait()
					t.Fatalf("worker said %q (%v), exited %v: %s", line, err, werr, logs.String())
				}
				return cmd
			}
			kill := func(cmd *exec.Cmd) {
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
			}
			ran := func() map[string]int {
				b, _ := os.ReadFile(notes)
				n := map[string]int{}
				for _, l := range strings.Fields(string(b)) {
					n[l]++
				}
				return n
			}
			c, err := sdk.NewClient(strings.TrimSuffix(base, "/v1/api"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var id string
			within := func(what string, cond func(*sdk.Run) bool) {
				t.Helper()
				testutil.Eventually(t, 40*time.Second, what, func() (bool, string) {
					r, err := c.Get(ctx, id)
					if err != nil {
						return false, err.Error()
					}
					return cond(r), fmt.Sprintf("run %s, %d operations, ran %v", r.Status, len(r.Step("main").Operations), ran())
				})
			}
			w := worker()
			r, err := c.Start(ctx, "fn-kill", sdk.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			id = r.ID
			testutil.Eventually(t, 20*time.Second, "step b to start", func() (bool, string) { return ran()["b"] == 1, fmt.Sprint(ran()) })
			kill(w) // mid-step
			w = worker()
			within("the sleep to suspend the function", func(r *sdk.Run) bool {
				ops := r.Step("main").Operations
				return len(ops) >= 3 && ops[2].ID == "/nap#0"
			})
			kill(w) // mid-sleep
			w = worker()
			testutil.Eventually(t, 30*time.Second, "the map's items to start", func() (bool, string) {
				n := ran()
				return n["m1"]+n["m2"]+n["m3"]+n["m4"] >= 4, fmt.Sprint(n)
			})
			kill(w) // mid-map
			worker()
			within("the run to complete", func(r *sdk.Run) bool { return r.Status.Terminal() })
			got, err := c.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			n := ran()
			if got.Status != sdk.RunCompleted || string(got.Output) != "33" {
				t.Fatalf("run %s output %s error %+v; ran %v", got.Status, got.Output, got.Error, n)
			}
			if n["a"] != 1 || n["b"] != 2 {
				t.Fatalf("a ran %d times (want 1: it completed before the first kill), b %d (want 2: killed once mid-step); %v", n["a"], n["b"], n)
			}
			seen := map[string]int{}
			for _, op := range got.Step("main").Operations {
				seen[op.ID]++
			}
			for _, id := range []string{"/a#0", "/b#0", "/nap#0", "/m#0/0/sq#0", "/m#0/3/sq#0"} {
				if seen[id] != 1 {
					t.Errorf("the history holds %s %d times, want once: %v", id, seen[id], seen)
				}
			}
			if a := got.Step("main").Attempts; len(a) < 4 || !hasOutcome(a, cairn.OutcomeLost) || !hasOutcome(a, cairn.OutcomeSuspended) {
				t.Errorf("attempts %+v: want lost and suspended ones", a)
			}
		})
	}
}

func hasOutcome(as []cairn.Attempt, o cairn.AttemptOutcome) bool {
	for _, a := range as {
		if a.Outcome == o {
			return true
		}
	}
	return false
}
