package testinfra

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var fakeGCSOnce shared[string]

// FakeGCS returns the URL of the test binary's fake-gcs-server, started
// on first use as a child process (./fakegcs, built without -race: under
// the race detector the emulator alone took ten minutes of one CI engine
// suite) and stopped by Main. Unlike MinIO and Azurite it also runs under
// -short: it needs nothing but Go. Give each test its own bucket
// (CreateGCSBucket).
func FakeGCS(t testing.TB) string {
	t.Helper()
	if !mainRunning.Load() {
		t.Fatalf("testinfra: fake-gcs-server needs this package's TestMain to call testinfra.Main(m)")
	}
	fakeGCSOnce.start(t, "fake-gcs-server", "", startFakeGCS)
	return fakeGCSOnce.v
}

// CreateGCSBucket creates bucket name on the fake-gcs-server at url.
func CreateGCSBucket(t testing.TB, url, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"name":%q}`, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/storage/v1/b?project=test", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("testinfra: create GCS bucket %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("testinfra: create GCS bucket %s: %s: %s", name, resp.Status, b.String())
	}
}

// GoBuild builds target (a package path, or "." in dir) as a plain
// binary — no race detector, no cgo — named name in a new temporary
// directory, and returns its path and that directory (the caller removes
// it). The test emulators written in Go are built this way.
func GoBuild(dir, target, name string) (bin, tmp string, err error) {
	tmp, err = os.MkdirTemp("", "cairn-"+name+"-")
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(tmp, name)
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(gobin, "build", "-o", bin, target)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", "", fmt.Errorf("go build %s: %v\n%s", target, err, out)
	}
	return bin, tmp, nil
}

func startFakeGCS() (string, error) {
	bin, dir, err := GoBuild("", "github.com/cairn-dev/cairn/internal/testinfra/fakegcs", "fakegcs")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe() // closed when this binary ends: the child exits
	if err != nil {
		return "", err
	}
	out := &firstLine{line: make(chan string, 1)}
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	exited := make(chan struct{})
	stop := func() {
		stdin.Close()
		killChild(cmd)
		<-exited
		os.RemoveAll(dir)
	}
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case url := <-out.line:
		var once sync.Once
		onStop(func() { once.Do(stop) })
		return strings.TrimSpace(url), nil
	case <-exited:
		os.RemoveAll(dir)
		return "", fmt.Errorf("fakegcs exited: %s", stderr.String())
	case <-time.After(60 * time.Second):
		stop()
		return "", fmt.Errorf("fakegcs printed no URL within 60s: %s", stderr.String())
	}
}

// firstLine is a child's stdout that hands over its first line.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	sent bool
	line chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.sent {
		w.buf = append(w.buf, p...)
		if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
			w.line <- string(w.buf[:i])
			w.sent, w.buf = true, nil
		}
	}
	return len(p), nil
}
