package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/internal/testutil"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

// ---- building the real binaries ----

// repoRoot is the module root (functions/api is two levels down).
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// goBuild builds pkg as the release targets do (CGO_ENABLED=0, -trimpath,
// -ldflags "-s -w") into out, for this machine's OS, and returns out.
func goBuild(t testing.TB, pkg, out, tags, goarch string) string {
	t.Helper()
	args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// ---- the environment the functions run with ----

const (
	workerSecret = "worker-secret-e2e"
	adminSecret  = "admin-secret-e2e"
)

var keysEnv = "w1:worker+execute+read:" + auth.HashSecret(workerSecret) + ",ops:admin:" + auth.HashSecret(adminSecret)

// minioBucket makes a fresh bucket on the test binary's MinIO and returns
// the environment that points a function at it.
func minioBucket(t *testing.T) (env []string, ep *testinfra.MinIOEndpoint, bucket string) {
	t.Helper()
	ep = testinfra.MinIO(t)
	bucket = testinfra.NewBucketName(t)
	ep.CreateBucket(t, bucket)
	return []string{
		"CAIRN_BLOB=s3://" + bucket + "?endpoint=" + ep.Endpoint + "&use_path_style=true&region=" + ep.Region,
		"AWS_ACCESS_KEY_ID=" + ep.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + ep.SecretKey,
		"AWS_REGION=" + ep.Region,
		"CAIRN_KEYS=" + keysEnv,
	}, ep, bucket
}

// ---- talking to the API: plain HTTP or Lambda events ----

// caller sends one API request and returns the status and body.
type caller interface {
	call(t testing.TB, method, path string, body any) (int, []byte)
}

// httpCaller talks HTTP to a server.
type httpCaller struct {
	base string // http://127.0.0.1:PORT
	key  string
}

func (c httpCaller) call(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// v2Event is the Function URL / HTTP API (payload 2.0) event of a request.
func v2Event(method, path, key string, body any) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path,
		Headers: map[string]string{"content-type": "application/json", "host": "abc123.lambda-url.us-east-1.on.aws"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "abc123.lambda-url.us-east-1.on.aws", RequestID: fmt.Sprint(time.Now().UnixNano()),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1"},
		},
	}
	if key != "" {
		ev.Headers["authorization"] = "Bearer " + key
	}
	if body != nil {
		b, _ := json.Marshal(body)
		ev.Body = string(b)
	}
	return ev
}

func v2Body(resp events.APIGatewayV2HTTPResponse) []byte {
	if resp.IsBase64Encoded {
		b, _ := base64.StdEncoding.DecodeString(resp.Body)
		return b
	}
	return []byte(resp.Body)
}

// rieCaller invokes a function running under the Lambda Runtime
// Interface Emulator with payload-2.0 events, one at a time.
type rieCaller struct {
	invokeURL string
	key       string
}

func (c rieCaller) call(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	ev, _ := json.Marshal(v2Event(method, path, c.key, body))
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Post(c.invokeURL, "application/json", bytes.NewReader(ev))
	if err != nil {
		t.Fatalf("invoke %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("invoke %s %s: RIE answered %d: %s", method, path, resp.StatusCode, raw)
	}
	var out events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(raw, &out); err != nil || out.StatusCode == 0 {
		t.Fatalf("invoke %s %s: not a v2 response (%v): %s", method, path, err, raw)
	}
	return out.StatusCode, v2Body(out)
}

// ---- the worker protocol, by hand ----

// e2eWorkflow is a three-step chain: a → b → c.
func e2eWorkflow() map[string]any {
	return map[string]any{
		"name": "e2e", "version": "1",
		"steps": []map[string]any{
			{"id": "a", "input": map[string]any{"n": "${input.n}"}},
			{"id": "b", "after": []string{"a"}, "input": map[string]any{"n": "${steps.a.output.n + 1}"}},
			{"id": "c", "after": []string{"b"}, "input": map[string]any{"n": "${steps.b.output.n + 1}"}},
		},
	}
}

type lease struct {
	ID      string          `json:"id"`
	Run     string          `json:"run"`
	Step    string          `json:"step"`
	Attempt int             `json:"attempt"`
	Input   json.RawMessage `json:"input"`
}

func mustStatus(t testing.TB, what string, code int, body []byte, want int) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: HTTP %d, want %d: %s", what, code, want, body)
	}
}

func register(t testing.TB, c caller, worker string) {
	t.Helper()
	code, body := c.call(t, "POST", api.BasePath+"/workers/register", map[string]any{"worker_id": worker, "workflows": []any{e2eWorkflow()}})
	mustStatus(t, "register", code, body, 200)
}

func startRun(t testing.TB, c caller, n int) string {
	t.Helper()
	code, body := c.call(t, "POST", api.BasePath+"/runs", map[string]any{"workflow": "e2e", "input": map[string]any{"n": n}})
	mustStatus(t, "start run", code, body, 201)
	var r struct {
		Run struct{ ID string } `json:"run"`
	}
	json.Unmarshal(body, &r)
	return r.Run.ID
}

func claim(t testing.TB, c caller, worker, run string, waitMs int) []lease {
	t.Helper()
	code, body := c.call(t, "POST", api.BasePath+"/steps/claim", map[string]any{"worker_id": worker, "run": run, "wait_ms": waitMs})
	mustStatus(t, "claim", code, body, 200)
	var r struct{ Leases []lease }
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("claim: %v: %s", err, body)
	}
	return r.Leases
}

func claimOne(t testing.TB, c caller, worker, run, step string) lease {
	t.Helper()
	ls := claim(t, c, worker, run, 5000)
	if len(ls) != 1 || ls[0].Step != step {
		t.Fatalf("claim: got %+v, want one lease of step %s", ls, step)
	}
	return ls[0]
}

func started(t testing.TB, c caller, l lease) {
	t.Helper()
	code, body := c.call(t, "POST", api.BasePath+"/steps/"+l.ID+"/started", nil)
	mustStatus(t, "started "+l.Step, code, body, 200)
}

// complete echoes the lease's input n as the output.
func complete(t testing.TB, c caller, l lease) {
	t.Helper()
	var in struct{ N int }
	json.Unmarshal(l.Input, &in)
	code, body := c.call(t, "POST", api.BasePath+"/steps/"+l.ID+"/complete", map[string]any{"output": map[string]any{"n": in.N}})
	mustStatus(t, "complete "+l.Step, code, body, 200)
}

type runView struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
}

func getRun(t testing.TB, c caller, run string) runView {
	t.Helper()
	code, body := c.call(t, "GET", api.BasePath+"/runs/"+run, nil)
	mustStatus(t, "get run", code, body, 200)
	var r runView
	json.Unmarshal(body, &r)
	return r
}

// waitHealthy probes the health endpoint until it answers 200 (every
// millisecond: the time it took is measured) and returns how long it took.
func waitHealthy(t testing.TB, base string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c := &http.Client{Timeout: time.Second}
	testutil.EventuallyEvery(t, within, time.Millisecond, base+" healthy", func() (bool, string) {
		resp, err := c.Get(base + api.BasePath + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, "healthz " + resp.Status
	})
	return time.Since(start)
}

// process is a function binary running as a child process.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

func startProcess(t testing.TB, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
	return p
}

// syncBuffer is a log sink safe for concurrent writers and readers.
type syncBuffer = testutil.SyncBuffer

func hostArch() string { return runtime.GOARCH }

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
