package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
)

func TestDevEnviron(t *testing.T) {
	env, err := devEnviron([]string{"HOME=/h"}, "/data")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := lookup(env, "CAIRN_BLOB"); v != "file:///data" {
		t.Errorf("default store %q", v)
	}
	env, _ = devEnviron([]string{"CAIRN_BLOB=mem://"}, "/data")
	if v, _ := lookup(env, "CAIRN_BLOB"); v != "mem://" {
		t.Errorf("CAIRN_BLOB lost: %q", v)
	}
	for _, tc := range []struct {
		env []string
		dev bool
	}{
		{nil, true},
		{[]string{"CAIRN_KEYS=w:worker:abc"}, false},
		{[]string{"CAIRN_KEYS= "}, true},
		{[]string{"CAIRN_DEV=false"}, false},
		{[]string{"CAIRN_KEYS=w:worker:abc", "CAIRN_KEYS="}, true}, // --keys "" is not given; the last entry counts
	} {
		v, _ := lookup(devMode(tc.env), "CAIRN_DEV")
		if (v == "true") != tc.dev {
			t.Errorf("%q: CAIRN_DEV=%q, want dev %v", tc.env, v, tc.dev)
		}
	}
}

// syncBuffer is a log sink safe for concurrent writers and readers.
type syncBuffer = testutil.SyncBuffer

// TestDevReadsTheEnvironment: cairn dev goes through internal/config, so
// the CAIRN_* variables apply (here a bad one stops it, and a store and a
// log level take effect), flags on top.
func TestDevReadsTheEnvironment(t *testing.T) {
	t.Setenv("CAIRN_LOG_LEVEL", "loud")
	root := newRootCmd()
	root.SetArgs([]string{"dev", "--addr", "127.0.0.1:0"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	err := root.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "CAIRN_LOG_LEVEL") {
		t.Fatalf("got %v, want CAIRN_LOG_LEVEL refused", err)
	}

	t.Setenv("CAIRN_LOG_LEVEL", "debug")
	t.Setenv("CAIRN_BLOB", "mem://")
	d := startDev(t, "--addr", "127.0.0.1:0", "--reap-every", "10ms")
	testutil.GetOK(t, d.base+"/v1/api/healthz")
	if err := d.stop(); err != nil {
		t.Fatalf("dev stopped with %v", err)
	}
	if !strings.Contains(d.out.String(), "store mem://") {
		t.Errorf("banner:\n%s", d.out.String())
	}
	// debug: the reaper's routine passes show.
	if l := d.logs.String(); !strings.Contains(l, "level=DEBUG") || !strings.Contains(l, "DEV MODE") {
		t.Errorf("logs:\n%s", l)
	}
}

// cairn dev --metrics serves the engine's metrics for Prometheus at
// /metrics, beside the API; without the flag there is no such path.
func TestDevServesMetrics(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Setenv("CAIRN_BLOB", "mem://")
		args := []string{"--addr", "127.0.0.1:0", "--log-level", "error"}
		if on {
			args = append(args, "--metrics")
		}
		d := startDev(t, args...)
		// One API call that reads the bucket.
		resp, err := http.Get(d.base + "/v1/api/runs")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = http.Get(d.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if on {
			for _, want := range []string{
				`cairn_blob_requests_total{class="put",op="list"`,
				`cairn_api_request_duration_seconds_count{op="listRuns",`,
			} {
				if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
					t.Errorf("/metrics: %d, no %s in\n%s", resp.StatusCode, want, body)
				}
			}
		} else if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/metrics without --metrics: %d, want 404", resp.StatusCode)
		}
		if strings.Contains(d.logs.String(), "level=INFO") {
			t.Errorf("--log-level error still logs info:\n%s", d.logs.String())
		}
		if err := d.stop(); err != nil {
			t.Fatalf("dev stopped with %v", err)
		}
	}
}

// Under cairn dev a worker restarted with an edited definition of the same
// version is taken (no 409), and the log says what happened to runs in
// flight; cairn serve keeps definitions immutable (the engine's tests).
func TestDevTakesAnEditedDefinition(t *testing.T) {
	t.Setenv("CAIRN_BLOB", "mem://")
	d := startDev(t, "--addr", "127.0.0.1:0")
	c, err := sdk.NewClient(d.base)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, steps := range []string{`[{"id":"a"}]`, `[{"id":"a"},{"id":"b","after":["a"]}]`} {
		body := `{"worker_id":"w1","workflows":[{"name":"edit","version":"1","steps":` + steps + `}]}`
		resp, err := http.Post(d.base+"/v1/api/workers/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("registering %s: %d %s", steps, resp.StatusCode, msg)
		}
	}
	if wf, err := c.Workflow(ctx, "edit", "1"); err != nil || len(wf.Steps) != 2 {
		t.Fatalf("the stored definition: %+v %v", wf, err)
	}
	if !strings.Contains(d.logs.String(), "workflow definition changed") {
		t.Fatalf("the log does not say the definition changed:\n%s", d.logs.String())
	}
}

// devRun is a `cairn dev` the test runs.
type devRun struct {
	base      string // the server's root, http://HOST:PORT
	out, logs syncBuffer
	stop      func() error // stops it and returns what it returned
}

// startDev runs `cairn dev` with args until stop or the test's end, and
// returns once it printed its banner (failing the test if it stops
// first or prints none within 10 seconds).
func startDev(t *testing.T, args ...string) *devRun {
	t.Helper()
	d := &devRun{}
	root := newRootCmd()
	root.SetArgs(append([]string{"dev"}, args...))
	root.SetOut(&d.out)
	root.SetErr(&d.logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	d.stop = sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() { d.stop() })
	re := regexp.MustCompile(`API on (http://\S+)/v1/api`)
	testutil.Eventually(t, 10*time.Second, "cairn dev's banner", func() (bool, string) {
		if m := re.FindStringSubmatch(d.out.String()); m != nil {
			d.base = m[1]
		}
		select {
		case err := <-done:
			done <- err // for stop
			t.Fatalf("dev stopped: %v\n%s", err, d.logs.String())
		default:
		}
		return d.base != "", d.out.String() + "\n" + d.logs.String()
	})
	return d
}

// The banner's next: hint names the server dev listens on: the default
// address needs nothing, another one is exported as CAIRN_SERVER (which
// the example worker and the CLI read), a wildcard host as loopback.
func TestDevNextHintUsesTheAddress(t *testing.T) {
	for _, tc := range []struct {
		addr *net.TCPAddr
		want string // "" : no export
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, ""},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}, "export CAIRN_SERVER=http://127.0.0.1:9090"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, ""},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 7000}, "export CAIRN_SERVER=http://127.0.0.1:7000"},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8080}, "export CAIRN_SERVER=http://10.1.2.3:8080"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "export CAIRN_SERVER=http://[::1]:8080"},
	} {
		h := nextHint(tc.addr)
		if !strings.HasPrefix(h, "next: ") || !strings.Contains(h, "go run ./examples/triage") {
			t.Errorf("%v: hint\n%s", tc.addr, h)
		}
		if got := strings.Contains(h, "CAIRN_SERVER"); got != (tc.want != "") || (tc.want != "" && !strings.Contains(h, tc.want)) {
			t.Errorf("%v: hint\n%s\nwant %q", tc.addr, h, tc.want)
		}
	}

	// The real banner, on a port the system picks.
	t.Setenv("CAIRN_BLOB", "mem://")
	d := startDev(t, "--addr", "127.0.0.1:0", "--log-level", "error")
	if !strings.Contains(d.out.String(), "export CAIRN_SERVER="+d.base+" ") {
		t.Errorf("banner names no %s:\n%s", d.base, d.out.String())
	}
}
