package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/s3"
	"github.com/cairn-dev/cairn/internal/testinfra"
	"github.com/cairn-dev/cairn/internal/testutil"
)

var sigterm = syscall.SIGTERM

func itoa(n int) string { return strconv.Itoa(n) }

// rieModule is the Lambda Runtime Interface Emulator the Lambda test runs
// the bootstrap under, pinned.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// openBucket opens the test's MinIO bucket directly, to look at what the
// functions left in it.
func openBucket(t *testing.T, ep *testinfra.MinIOEndpoint, name string) *blob.Bucket {
	t.Helper()
	b, err := s3.New(context.Background(), s3.Options{Bucket: name, Region: ep.Region, Endpoint: ep.Endpoint, UsePathStyle: true, AccessKey: ep.AccessKey, SecretKey: ep.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func leaseKeys(t *testing.T, b *blob.Bucket) []string {
	t.Helper()
	p, err := b.List(context.Background(), blob.ListOptions{Prefix: "leases/"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range p.Objects {
		keys = append(keys, o.Key)
	}
	return keys
}

// claimAnswer is what a held claim answered, and when.
type claimAnswer struct {
	code   int
	leases []lease
	at     time.Time
	err    error
}

// heldClaim sends a claim from a goroutine (no t.Fatal there) and delivers
// its answer and when it came. It returns once the server reports the
// claim held (held_claims in its health answer): from then on it is. A
// claim that answers with leases before it is held found ready work an
// earlier instance left (a run started as that instance drained, which no
// claim took): those leases go to early, and the claim is sent again.
func heldClaim(t *testing.T, base, worker, run string, waitMs int, early func([]lease)) <-chan claimAnswer {
	t.Helper()
	for {
		ch := sendClaim(base, worker, run, waitMs)
		var a claimAnswer
		held := false
		testutil.Eventually(t, 10*time.Second, "the claim held on "+base, func() (bool, string) {
			select {
			case a = <-ch:
				return true, ""
			default:
			}
			var h struct {
				HeldClaims int `json:"held_claims"`
			}
			resp, err := http.Get(base + api.BasePath + "/healthz")
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
				return false, fmt.Sprintf("healthz %s: %v", resp.Status, err)
			}
			held = h.HeldClaims > 0
			return held, fmt.Sprintf("healthz %s, held_claims %d", resp.Status, h.HeldClaims)
		})
		if held {
			return ch
		}
		if early == nil || a.err != nil || a.code != 200 || len(a.leases) == 0 {
			t.Fatalf("the claim answered before it was held: %d %+v %v", a.code, a.leases, a.err)
		}
		early(a.leases)
	}
}

// sendClaim sends a claim from a goroutine and returns once its request
// is written; the channel delivers its answer.
func sendClaim(base, worker, run string, waitMs int) <-chan claimAnswer {
	ch := make(chan claimAnswer, 1)
	written := make(chan struct{})
	go func() {
		body, _ := json.Marshal(map[string]any{"worker_id": worker, "run": run, "wait_ms": waitMs})
		var once sync.Once
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(written) }) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", base+api.BasePath+"/steps/claim", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+workerSecret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		once.Do(func() { close(written) })
		if err != nil {
			ch <- claimAnswer{err: err, at: time.Now()}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		a := claimAnswer{code: resp.StatusCode, at: time.Now()}
		var out struct{ Leases []lease }
		if err := json.Unmarshal(raw, &out); err != nil {
			a.err = fmt.Errorf("%v: %s", err, raw)
		}
		a.leases = out.Leases
		ch <- a
	}()
	<-written
	return ch
}

func leaseKey(l lease) string { return fmt.Sprintf("leases/%s/%s/%06d", l.Run, l.Step, l.Attempt) }

// testSIGTERM: SIGTERM during a held claim makes the claim answer, empty,
// before the process exits; and no lease is left offered to a worker that
// never saw it, even when a run starts just as the signal arrives.
func testSIGTERM(t *testing.T, bin string) {
	env, ep, name := minioBucket(t)
	b := openBucket(t, ep, name)
	startAPI := func() (*process, string) {
		port := testinfra.FreePort(t)
		p := startProcess(t, bin, append(env, "PORT="+itoa(port)))
		base := "http://127.0.0.1:" + itoa(port)
		waitHealthy(t, base, 15*time.Second)
		return p, base
	}

	// 1. Nothing to do: the claim is held, SIGTERM, it answers at once.
	p, base := startAPI()
	c := httpCaller{base: base, key: workerSecret}
	register(t, c, "w1")
	answer := heldClaim(t, base, "w1", "", 20000, nil) // now held
	signalled := time.Now()
	p.cmd.Process.Signal(sigterm)
	var a claimAnswer
	select {
	case a = <-answer:
	case <-time.After(5 * time.Second):
		t.Fatal("the held claim did not answer within 5 s of SIGTERM")
	}
	if a.err != nil || a.code != 200 || a.leases == nil || len(a.leases) != 0 {
		t.Fatalf("held claim after SIGTERM: %d %+v %v; want 200 with no lease", a.code, a.leases, a.err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, p.out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit within 10 s of SIGTERM")
	}
	exited := time.Now()
	t.Logf("SIGTERM → held claim answered in %v, process exited in %v",
		a.at.Sub(signalled).Round(time.Millisecond), exited.Sub(signalled).Round(time.Millisecond))
	if !a.at.Before(exited) {
		t.Error("the claim answered after the process exited")
	}
	if keys := leaseKeys(t, b); len(keys) != 0 {
		t.Fatalf("leases left in the bucket: %v", keys)
	}

	// 2. A run starts as SIGTERM arrives: whatever wins the race, every
	// lease in the bucket is one the worker received. A few timings, so
	// that the run lands before, during and after the drain.
	got := map[string]lease{} // run → the lease the worker received
	var runs []string
	for _, delay := range []time.Duration{0, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
		p, base = startAPI()
		answer = heldClaim(t, base, "w1", "", 20000, func(ls []lease) {
			t.Logf("SIGTERM %v after a start: first, %d lease(s) of ready work an earlier round left", delay, len(ls))
			for _, l := range ls {
				got[l.Run] = l
			}
		})
		runStarted := make(chan string, 1)
		go func() {
			body, _ := json.Marshal(map[string]any{"workflow": "e2e", "input": map[string]any{"n": 1}})
			req, _ := http.NewRequest("POST", base+api.BasePath+"/runs", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+workerSecret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				runStarted <- ""
				return
			}
			defer resp.Body.Close()
			var r struct{ Run struct{ ID string } }
			json.NewDecoder(resp.Body).Decode(&r)
			runStarted <- r.Run.ID
		}()
		time.Sleep(delay)
		p.cmd.Process.Signal(sigterm)
		a = <-answer
		run := <-runStarted
		if err := <-p.done; err != nil {
			t.Fatalf("exit: %v\n%s", err, p.out)
		}
		if a.err != nil || a.code != 200 {
			t.Fatalf("held claim: %d %v", a.code, a.err)
		}
		for _, l := range a.leases {
			got[l.Run] = l
		}
		if run != "" {
			runs = append(runs, run)
		}
		t.Logf("SIGTERM %v after a start: run started: %v; the held claim got %d lease(s)", delay, run != "", len(a.leases))
	}
	seen := map[string]bool{}
	for _, l := range got {
		seen[leaseKey(l)] = true
	}
	for _, k := range leaseKeys(t, b) {
		if !seen[k] {
			t.Fatalf("lease %s is in the bucket but no worker saw it (the claims got %+v)", k, got)
		}
	}

	// Every run started goes on on a new instance: with the lease the
	// worker holds, or with a fresh claim (no lease stands in the way).
	_, base = startAPI()
	c = httpCaller{base: base, key: workerSecret}
	for _, run := range runs {
		la, ok := got[run]
		if !ok {
			la = claimOne(t, c, "w1", run, "a")
		}
		started(t, c, la)
		complete(t, c, la)
		for _, step := range []string{"b", "c"} {
			l := claimOne(t, c, "w1", run, step)
			started(t, c, l)
			complete(t, c, l)
		}
		if r := getRun(t, c, run); r.Status != "completed" {
			t.Fatalf("run %s: %+v", run, r)
		}
	}
}

// installRIE builds the Lambda Runtime Interface Emulator into dir.
func installRIE(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("go", "install", rieModule)
	cmd.Dir = dir // outside this module: go install pkg@version ignores go.mod anyway
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", rieModule, err, out)
	}
	return dir + "/aws-lambda-rie"
}

func waitTCP(t *testing.T, addr string, within time.Duration) {
	t.Helper()
	testutil.EventuallyEvery(t, within, 5*time.Millisecond, addr+" listening", func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
}

// testLambdaRIE runs the real bootstrap under the Runtime Interface
// Emulator, against MinIO, with Function URL (payload 2.0) events.
func testLambdaRIE(t *testing.T, dir string) {
	env, _, _ := minioBucket(t) // skips under -short before any build
	tags := makeVar(t, "LAMBDA_TAGS")
	boot := lambdaAPIBootstrap(t, dir)
	t.Logf("Lambda bootstrap (%s, linux/%s): %s", tags, hostArch(), mb(fileSize(t, boot)))
	rie := installRIE(t, dir)
	rieAddr := testinfra.FreeAddr(t)
	startProcess(t, rie, append(env,
		"AWS_LAMBDA_FUNCTION_NAME=cairn-api", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=4", // seconds: the invocation deadline the claim must respect
		"CAIRN_MAX_REQUEST_TIME=30s",
	), "--runtime-api-address", testinfra.FreeAddr(t), "--runtime-interface-emulator-address", rieAddr, boot)
	waitTCP(t, rieAddr, 15*time.Second)
	c := rieCaller{invokeURL: "http://" + rieAddr + "/2015-03-31/functions/function/invocations", key: workerSecret}

	start := time.Now()
	code, body := c.call(t, "GET", api.BasePath+"/healthz", nil)
	mustStatus(t, "healthz", code, body, 200)
	first := time.Since(start)
	start = time.Now()
	c.call(t, "GET", api.BasePath+"/healthz", nil)
	warm := time.Since(start)

	register(t, c, "lw")
	run := startRun(t, c, 1)
	for _, step := range []string{"a", "b", "c"} {
		l := claimOne(t, c, "lw", run, step)
		started(t, c, l)
		complete(t, c, l)
	}
	r := getRun(t, c, run)
	if r.Status != "completed" || string(r.Output) != `{"n":3}` {
		t.Fatalf("run: %+v", r)
	}

	// Lambda's claim policy, by default: a claim asking to wait 20 s is
	// held 2 s (CAIRN_CLAIM_HOLD) and its empty answer asks the worker to
	// pause 20 s (pause_ms, CAIRN_CLAIM_PAUSE) before the next.
	start = time.Now()
	code, body = c.call(t, "POST", api.BasePath+"/steps/claim", map[string]any{"worker_id": "lw", "wait_ms": 20000})
	short := time.Since(start)
	mustStatus(t, "claim", code, body, 200)
	var empty struct {
		Leases  []lease `json:"leases"`
		PauseMs int64   `json:"pause_ms"`
	}
	if err := json.Unmarshal(body, &empty); err != nil || empty.Leases == nil || len(empty.Leases) != 0 || empty.PauseMs != 20000 {
		t.Fatalf("claim with no work answered %s; want no lease and pause_ms 20000", body)
	}
	if short < 1800*time.Millisecond || short > 2900*time.Millisecond {
		t.Fatalf("claim held %v on Lambda's default policy; want about 2 s", short)
	}
	// RIE starts the bootstrap on the first invocation: that one is the
	// cold start (process start, init, first request served).
	t.Logf("under RIE: first (cold) invocation %v, warm invocation %v; a 20 s claim held %v (Lambda's default hold), pause_ms %d",
		first.Round(time.Millisecond), warm.Round(time.Millisecond), short.Round(time.Millisecond), empty.PauseMs)

	// With long holds configured, a claim asking to wait 20 s in a 4 s
	// invocation answers, empty, about 500 ms before the deadline: the
	// deadline reached the engine.
	longAddr := testinfra.FreeAddr(t)
	startProcess(t, rie, append(env,
		"AWS_LAMBDA_FUNCTION_NAME=cairn-api", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=4", // seconds: the invocation deadline the claim must respect
		"CAIRN_MAX_REQUEST_TIME=30s", "CAIRN_CLAIM_HOLD=24s",
	), "--runtime-api-address", testinfra.FreeAddr(t), "--runtime-interface-emulator-address", longAddr, boot)
	waitTCP(t, longAddr, 15*time.Second)
	lc := rieCaller{invokeURL: "http://" + longAddr + "/2015-03-31/functions/function/invocations", key: workerSecret}
	lc.call(t, "GET", api.BasePath+"/healthz", nil) // the cold start, outside the measure
	start = time.Now()
	if ls := claim(t, lc, "lw", "", 20000); len(ls) != 0 {
		t.Fatalf("claim with no work: %+v", ls)
	}
	held := time.Since(start)
	if held < 2500*time.Millisecond || held > 3900*time.Millisecond {
		t.Fatalf("claim held %v in a 4 s invocation; want about 3.5 s", held)
	}
	t.Logf("under RIE with CAIRN_CLAIM_HOLD=24s: a 20 s claim in a 4 s invocation held %v", held.Round(time.Millisecond))

	// The reaper's bootstrap, invoked as EventBridge Scheduler does, on
	// the same bucket: one pass per invocation, statistics as the result.
	reaperBoot := goBuild(t, "./functions/reaper", dir+"/reaper/bootstrap", tags, hostArch())
	rAddr := testinfra.FreeAddr(t)
	startProcess(t, rie, append(env, "AWS_LAMBDA_FUNCTION_NAME=cairn-reaper", "AWS_LAMBDA_FUNCTION_TIMEOUT=60"),
		"--runtime-api-address", testinfra.FreeAddr(t), "--runtime-interface-emulator-address", rAddr, reaperBoot)
	waitTCP(t, rAddr, 15*time.Second)
	ev := `{"version":"0","id":"x","detail-type":"Scheduled Event","source":"aws.scheduler","account":"123456789012","time":"2026-11-29T10:00:00Z","region":"us-east-1","resources":[],"detail":"{}"}`
	resp, err := http.Post("http://"+rAddr+"/2015-03-31/functions/function/invocations", "application/json", strings.NewReader(ev))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var stats map[string]any
	if err := json.Unmarshal(raw, &stats); err != nil || stats["list_requests"] == nil || stats["errors"] != float64(0) {
		t.Fatalf("reaper invocation answered %d %s", resp.StatusCode, raw)
	}
	t.Logf("reaper under RIE: %s", raw)
}

// buildImage builds the real container image (make image) once per test
// binary; it is removed when the binary's services stop.
func buildImage(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() {
		imageName = fmt.Sprintf("localhost/cairn-test:%d", os.Getpid())
		build := exec.Command(repoRoot(t)+"/infra/image/build.sh", imageName)
		build.Dir = repoRoot(t)
		var stderr bytes.Buffer
		build.Stderr = &stderr
		if err := build.Run(); err != nil {
			imageErr = fmt.Errorf("infra/image/build.sh: %v\n%s", err, stderr.String())
			return
		}
		t.Log(string(bytes.TrimSpace(stderr.Bytes())))
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageName
}

var (
	imageOnce sync.Once
	imageName string
	imageErr  error
)

func removeImage() {
	if imageName == "" {
		return
	}
	cli, err := testcontainers.NewDockerClientWithOpts(context.Background())
	if err == nil {
		cli.ImageRemove(context.Background(), imageName, client.ImageRemoveOptions{Force: true})
		cli.Close()
	}
}

// gcsBucket starts a fake-gcs-server on 127.0.0.1 with a fresh bucket and
// returns the environment that points the functions at it: what a Cloud
// Run deployment's gs:// bucket is, short of Google.
func gcsBucket(t *testing.T) []string {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1"})
	if err != nil {
		t.Fatalf("fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	name := testinfra.NewBucketName(t)
	srv.CreateBucket(name)
	return []string{"CAIRN_BLOB=gs://" + name + "?endpoint=" + srv.URL(), "CAIRN_KEYS=" + keysEnv}
}

// testCloudRunImage runs the real container image (make image) the way
// Cloud Run does — K_SERVICE set, SIGTERM with 10 s of grace on scale-in —
// against the bucket env names (MinIO, or fake-gcs-server as Cloud Run's
// own store), drives a workflow with raw HTTP calls from outside, and
// replaces the container mid-run: the run still finishes.
func testCloudRunImage(t *testing.T, env []string) {
	ctx := ctxTimeout(t, 3*time.Minute)
	image := buildImage(t)

	port := testinfra.FreePort(t)
	base := "http://127.0.0.1:" + itoa(port)
	ctrEnv := map[string]string{"K_SERVICE": "cairn-api", "CAIRN_HOST": "127.0.0.1", "PORT": itoa(port)}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		ctrEnv[k] = v
	}
	startCtr := func() (testcontainers.Container, time.Duration) {
		t.Helper()
		start := time.Now()
		ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
			Started: true,
			ContainerRequest: testcontainers.ContainerRequest{
				Image: image,
				Env:   ctrEnv,
				// Host networking keeps everything on 127.0.0.1: the container
				// reaches the store's port and binds CAIRN_HOST:PORT.
				HostConfigModifier: func(hc *container.HostConfig) { hc.NetworkMode = "host" },
				WaitingFor:         wait.ForLog("cairn api: serving").WithStartupTimeout(30 * time.Second),
			},
		})
		if ctr != nil {
			t.Cleanup(func() { testcontainers.TerminateContainer(ctr) })
		}
		if err != nil {
			t.Fatalf("starting %s: %v", image, err)
		}
		waitHealthy(t, base, 10*time.Second)
		return ctr, time.Since(start)
	}
	ctr1, took := startCtr()
	t.Logf("container start → healthy: %v", took.Round(time.Millisecond))

	c := httpCaller{base: base, key: workerSecret}
	register(t, c, "cw")
	run := startRun(t, c, 1)
	la := claimOne(t, c, "cw", run, "a")
	started(t, c, la)
	complete(t, c, la)
	lb := claimOne(t, c, "cw", run, "b")
	started(t, c, lb)

	// A claim is held when Cloud Run scales the instance in.
	answer := heldClaim(t, base, "cw", run, 20000, nil)
	stopTimeout := 10 * time.Second
	stopped := time.Now()
	if err := ctr1.Stop(ctx, &stopTimeout); err != nil {
		t.Fatal(err)
	}
	a := <-answer
	if a.err != nil || a.code != 200 || len(a.leases) != 0 {
		t.Fatalf("claim held during the stop: %d %+v %v", a.code, a.leases, a.err)
	}
	st, err := ctr1.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitCode != 0 {
		logs, _ := ctr1.Logs(ctx)
		out, _ := io.ReadAll(logs)
		t.Fatalf("the container exited with %d after SIGTERM:\n%s", st.ExitCode, out)
	}
	t.Logf("stop: held claim answered after %v, container stopped after %v (exit 0)",
		a.at.Sub(stopped).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))

	// A new instance: the worker finishes b with the lease the old one
	// handed out, then claims c.
	startCtr()
	complete(t, c, lb)
	lc := claimOne(t, c, "cw", run, "c")
	started(t, c, lc)
	complete(t, c, lc)
	if r := getRun(t, c, run); r.Status != "completed" || string(r.Output) != `{"n":3}` {
		t.Fatalf("run: %+v", r)
	}
}
