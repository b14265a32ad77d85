// Package e2e runs cairn as separate processes, the way `make up` does:
// two API instances and a reaper on MinIO with NATS between them, and
// workers that die with kill -9.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testinfra"
	"github.com/cairn-dev/cairn/internal/testinfra/testnats"
	"github.com/cairn-dev/cairn/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv(doomedEnv) != "" {
		os.Exit(doomedWorker())
	}
	if os.Getenv(fnWorkerEnv) != "" {
		os.Exit(fnWorker())
	}
	testinfra.Main(m)
}

// cluster is two API instances and a reaper.
type cluster struct {
	a, b string // base URLs of the API instances
}

func buildCairn(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "cairn")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/cairn")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("building cairn: %v", err)
	}
	return bin
}

// start runs a cairn subcommand until the test ends.
func start(t *testing.T, bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		terminate(cmd)
		if t.Failed() {
			t.Logf("cairn %s:\n%s", strings.Join(args, " "), logs.String())
		}
	})
	return cmd
}

// terminate stops cmd with SIGTERM and waits for it to exit, killing it
// after 10 seconds.
func terminate(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// waitHealthy probes base's health endpoint until it answers 200.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	testutil.EventuallyEvery(t, 30*time.Second, 50*time.Millisecond, base+" healthy", func() (bool, string) {
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == 200, "healthz " + res.Status
	})
}

func newCluster(t *testing.T) *cluster {
	mc := testinfra.MinIO(t)
	bucket := testinfra.NewBucketName(t)
	mc.CreateBucket(t, bucket)
	natsURL := testnats.URL(t)
	bin := buildCairn(t)
	env := []string{
		"AWS_ACCESS_KEY_ID=" + mc.AccessKey, "AWS_SECRET_ACCESS_KEY=" + mc.SecretKey,
		"CAIRN_BLOB=s3://" + bucket + "?endpoint=" + mc.Endpoint + "&use_path_style=true&region=" + mc.Region,
		"CAIRN_NOTIFY=" + natsURL,
		"CAIRN_DEV=true",
		"CAIRN_LEASE_TTL=2s",
	}
	addrA, addrB := testinfra.FreeAddr(t), testinfra.FreeAddr(t)
	start(t, bin, env, "serve", "--addr", addrA)
	start(t, bin, env, "serve", "--addr", addrB)
	start(t, bin, env, "reaper", "--every", "250ms")
	c := &cluster{a: "http://" + addrA + "/v1/api", b: "http://" + addrB + "/v1/api"}
	waitHealthy(t, c.a)
	waitHealthy(t, c.b)
	return c
}

// call posts JSON and decodes the answer; it returns the status.
func call(t testing.TB, method, url string, body, out any) int {
	status, b, err := send(method, url, body)
	if status == 0 {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if out != nil {
		json.Unmarshal(b, out)
	}
	if status >= 300 {
		t.Logf("%s %s → %d %s", method, url, status, b)
	}
	return status
}

// send sends body (if not nil) as JSON and returns the answer's status
// and body: a status of 0 with the error when no answer came, or the
// status with whatever body was read and the error that ended the read.
func send(method, url string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

type lease struct {
	ID      string `json:"id"`
	Run     string `json:"run"`
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
}

func claim(t testing.TB, base, worker string, waitMs int) []lease {
	var out struct {
		Leases []lease `json:"leases"`
	}
	if s := call(t, "POST", base+"/steps/claim", map[string]any{"worker_id": worker, "max": 1, "wait_ms": waitMs}, &out); s != 200 {
		t.Fatalf("claim: %d", s)
	}
	return out.Leases
}

func workflow(name, delivery string) map[string]any {
	return map[string]any{"name": name, "version": "1", "steps": []map[string]any{
		{"id": "work", "delivery": delivery},
		{"id": "after", "after": []string{"work"}},
	}}
}

func register(t testing.TB, base, worker string, wfs ...map[string]any) {
	if s := call(t, "POST", base+"/workers/register", map[string]any{"worker_id": worker, "workflows": wfs}, nil); s != 200 {
		t.Fatalf("register %s: %d", worker, s)
	}
}

func startRun(t testing.TB, base, wf string) string {
	var out struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	if s := call(t, "POST", base+"/runs", map[string]any{"workflow": wf, "input": map[string]any{"x": 1}}, &out); s != 201 {
		t.Fatalf("start: %d", s)
	}
	return out.Run.ID
}

func complete(t testing.TB, base string, l lease) {
	call(t, "POST", base+"/steps/"+l.ID+"/started", nil, nil)
	if s := call(t, "POST", base+"/steps/"+l.ID+"/complete", map[string]any{"output": l.Step}, nil); s != 200 {
		t.Fatalf("complete %s: %d", l.Step, s)
	}
}

type runView struct {
	Status string `json:"status"`
	Error  *struct {
		Class string `json:"class"`
	} `json:"error"`
	Steps []struct {
		ID       string `json:"id"`
		Attempts []struct {
			N       int    `json:"n"`
			Worker  string `json:"worker"`
			Outcome string `json:"outcome"`
		} `json:"attempts"`
	} `json:"steps"`
}

func getRun(t testing.TB, base, id string) runView {
	var r runView
	call(t, "GET", base+"/runs/"+id, nil, &r)
	return r
}

// TestWakeAcrossInstances: a worker long-polling instance A is woken by a
// run started on instance B, through NATS, in well under the fallback
// interval.
func TestWakeAcrossInstances(t *testing.T) {
	c := newCluster(t)
	register(t, c.a, "w-a", workflow("wake", "at_least_once"))
	for i := range 5 {
		got := make(chan []lease, 1)
		go func() { got <- claim(t, c.a, "w-a", 20000) }()
		awaitHeldClaim(t, c.a) // the claim is held on A
		t0 := time.Now()
		run := startRun(t, c.b, "wake")
		ls := <-got
		lat := time.Since(t0)
		if len(ls) != 1 || ls[0].Run != run {
			t.Fatalf("claim on A got %+v, want the run started on B", ls)
		}
		if lat > 5*time.Second {
			t.Fatalf("woken after %v: the notification did not cross instances", lat)
		}
		t.Logf("round %d: claim on A returned %v after the run started on B", i, lat.Round(time.Millisecond))
		complete(t, c.a, ls[0])
		complete(t, c.b, claim(t, c.b, "w-a", 5000)[0])
		if r := getRun(t, c.b, run); r.Status != "completed" {
			t.Fatalf("run %s", r.Status)
		}
	}
}

const (
	doomedEnv  = "CAIRN_E2E_DOOMED"
	doomedBase = "CAIRN_E2E_BASE"
)

// doomedWorker claims one step, declares it started and then hangs until
// killed: a worker process that dies mid-step.
func doomedWorker() int {
	base := os.Getenv(doomedBase)
	for range 100 {
		ls := claim(fatalTB{}, base, "w-doomed", 2000)
		if len(ls) == 0 {
			continue
		}
		call(fatalTB{}, "POST", base+"/steps/"+ls[0].ID+"/started", nil, nil)
		fmt.Println("LEASED", ls[0].Run, ls[0].Step)
		select {}
	}
	return 1
}

// TestKilledWorker: kill -9 a worker mid-step. Its lease expires; the step
// runs again elsewhere (at_least_once) or fails as lost (at_most_once). The
// journal shows both attempts and which worker held each.
func TestKilledWorker(t *testing.T) {
	c := newCluster(t)
	for _, delivery := range []string{"at_least_once", "at_most_once"} {
		t.Run(delivery, func(t *testing.T) {
			wf := "kill-" + strings.ReplaceAll(delivery, "_", "-")
			register(t, c.a, "w-doomed", workflow(wf, delivery))
			register(t, c.b, "w-survivor", workflow(wf, delivery))
			run := startRun(t, c.a, wf)
			exe, _ := os.Executable()
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), doomedEnv+"=1", doomedBase+"="+c.a)
			out, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "LEASED "+run) {
				t.Fatalf("doomed worker said %q (%v)", line, err)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			killed := time.Now()

			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				if r := getRun(t, c.b, run); r.Status != "running" {
					break
				}
				for _, l := range claim(t, c.b, "w-survivor", 1000) {
					complete(t, c.b, l)
				}
			}
			r := getRun(t, c.b, run)
			t.Logf("run %s %s %v after the kill", run, r.Status, time.Since(killed).Round(time.Millisecond))
			var work []struct {
				N       int    `json:"n"`
				Worker  string `json:"worker"`
				Outcome string `json:"outcome"`
			}
			for _, s := range r.Steps {
				if s.ID == "work" {
					work = s.Attempts
				}
			}
			if delivery == "at_least_once" {
				if r.Status != "completed" || len(work) != 2 || work[0].Worker != "w-doomed" || work[0].Outcome != "lost" || work[1].Worker != "w-survivor" || work[1].Outcome != "completed" {
					t.Fatalf("run %s, attempts of work %+v", r.Status, work)
				}
			} else {
				if r.Status != "failed" || r.Error == nil || r.Error.Class != "lost" || len(work) != 1 || work[0].Worker != "w-doomed" {
					t.Fatalf("run %s %+v, attempts of work %+v", r.Status, r.Error, work)
				}
			}
			var j struct {
				Entries []struct {
					Type   string `json:"type"`
					Step   string `json:"step"`
					Worker string `json:"worker"`
				} `json:"entries"`
			}
			call(t, "GET", c.a+"/runs/"+run+"/journal", nil, &j)
			var seen []string
			for _, e := range j.Entries {
				if e.Step == "work" && e.Worker != "" {
					seen = append(seen, e.Type+":"+e.Worker)
				}
			}
			t.Logf("journal of step work: %v", seen)
			if !strings.Contains(strings.Join(seen, " "), "lease_lost:w-doomed") {
				t.Fatalf("journal does not show the lost lease of w-doomed: %v", seen)
			}
		})
	}
}

// fatalTB lets the doomed worker process use the test helpers.
type fatalTB struct{ testing.TB }

func (fatalTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}
func (fatalTB) Logf(format string, args ...any) {}
func (fatalTB) Helper()                         {}

var _ = context.Background

// awaitHeldClaim returns once the instance at base reports a held claim
// in its health answer: the signal that a long poll is waiting, instead
// of a sleep that hopes it is.
func awaitHeldClaim(t testing.TB, base string) {
	t.Helper()
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "a held claim reported by "+base, func() (bool, string) {
		var h struct {
			HeldClaims int `json:"held_claims"`
		}
		s := call(t, "GET", base+"/healthz", nil, &h)
		return s == 200 && h.HeldClaims > 0, fmt.Sprintf("healthz %d, held_claims %d", s, h.HeldClaims)
	})
}
