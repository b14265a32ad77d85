package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

func TestMain(m *testing.M) { testinfra.Main(m) }

func loadFiles(t *testing.T) (map[string]string, []string, []entry) {
	t.Helper()
	env, order, err := loadEnv("../local.env")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := loadProcfile("../Procfile", env)
	if err != nil {
		t.Fatal(err)
	}
	return env, order, entries
}

// TestLocalSetup: every process of the Procfile gets an environment its
// binary accepts, and everything is on 127.0.0.1.
func TestLocalSetup(t *testing.T) {
	env, order, entries := loadFiles(t)
	apis, reapers := 0, 0
	for _, e := range entries {
		prog, args, vars := e.commandEnv()
		var role config.Role
		switch filepath.Base(prog) {
		case "cairn-api":
			role, apis = config.API, apis+1
		case "cairn-reaper":
			role, reapers = config.Reaper, reapers+1
			if !strings.Contains(strings.Join(args, " "), "-every") {
				t.Errorf("%s: the reaper runs as a loop (-every 1s)", e.Name)
			}
		case "nats-server":
			if !strings.Contains(strings.Join(args, " "), "-a 127.0.0.1") {
				t.Errorf("%s: NATS must bind 127.0.0.1: %v", e.Name, args)
			}
			continue
		default:
			t.Errorf("%s: unknown program %s", e.Name, prog)
			continue
		}
		var environ []string
		for _, k := range order {
			environ = append(environ, k+"="+env[k])
		}
		c, err := config.FromEnv(role, append(environ, vars...))
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if len(c.Warnings) > 0 {
			t.Errorf("%s: %v", e.Name, c.Warnings)
		}
		if c.Host != "127.0.0.1" {
			t.Errorf("%s binds %s", e.Name, c.Host)
		}
		for _, raw := range []string{c.Blob, c.Notify} {
			u, _ := url.Parse(raw)
			host := u.Hostname()
			if ep := u.Query().Get("endpoint"); ep != "" {
				eu, _ := url.Parse(ep)
				host = eu.Hostname()
			}
			if host != "127.0.0.1" && u.Scheme != "mem" {
				t.Errorf("%s: %s is not on 127.0.0.1", e.Name, raw)
			}
		}
	}
	if apis < 2 || reapers != 1 {
		t.Errorf("%d API instances and %d reapers; want two and one", apis, reapers)
	}
	if ports := apiPorts(entries); len(ports) != apis {
		t.Errorf("API ports %v", ports)
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

func call(t *testing.T, base, path string, body any) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := (&http.Client{Timeout: time.Minute}).Post(base+"/v1/api"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, out)
	}
	return out
}

// TestUp runs the whole local setup against the test MinIO: a claim held
// on one API instance wakes (through NATS) for a run started on the
// other, and a workflow runs to the end through the proxy.
func TestUp(t *testing.T) {
	ep := testinfra.MinIO(t)
	t.Chdir("../../..")
	t.Setenv("MINIO_ENDPOINT", ep.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", ep.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", ep.SecretKey)
	t.Setenv("CAIRN_BLOB", "s3://"+testinfra.NewBucketName(t)+"?endpoint="+ep.Endpoint+"&use_path_style=true&region=us-east-1")
	nats := freePort(t)
	t.Setenv("NATS_PORT", nats)
	t.Setenv("CAIRN_NOTIFY", "nats://127.0.0.1:"+nats+"?subject=cairn.test")
	api1, api2, proxy := freePort(t), freePort(t), freePort(t)
	t.Setenv("API1_PORT", api1)
	t.Setenv("API2_PORT", api2)
	t.Setenv("PROXY_PORT", proxy)

	ready := make(chan string, 1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run("infra/local/local.env", "infra/local/Procfile", false, &hooks{ready: func(a string) { ready <- a }, stop: stop})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("up: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("up did not get ready")
	}
	defer func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("up: %v", err)
		}
	}()

	wf := map[string]any{"name": "local", "version": "1", "steps": []map[string]any{{"id": "a"}, {"id": "b", "after": []string{"a"}}}}
	call(t, "http://"+addr, "/workers/register", map[string]any{"worker_id": "w", "workflows": []any{wf}})

	// A claim held on api-2; the run starts on api-1.
	type answer struct {
		body []byte
		at   time.Time
	}
	held := make(chan answer, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"worker_id": "w", "wait_ms": 20000})
		resp, err := http.Post("http://127.0.0.1:"+api2+"/v1/api/steps/claim", "application/json", bytes.NewReader(b))
		if err != nil {
			held <- answer{}
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		held <- answer{out, time.Now()}
	}()
	// Act once api-2 reports the claim held (its health answer), not after
	// a sleep that hopes it is.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var h struct {
			HeldClaims int `json:"held_claims"`
		}
		if resp, err := http.Get("http://127.0.0.1:" + api2 + "/v1/api/healthz"); err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
		if h.HeldClaims > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("api-2 never reported the held claim")
		}
	}
	started := time.Now()
	var run struct{ Run struct{ ID string } }
	json.Unmarshal(call(t, "http://127.0.0.1:"+api1, "/runs", map[string]any{"workflow": "local"}), &run)
	a := <-held
	var leases struct {
		Leases []struct{ ID, Step string }
	}
	json.Unmarshal(a.body, &leases)
	if len(leases.Leases) != 1 || leases.Leases[0].Step != "a" {
		t.Fatalf("the claim held on api-2 got %s", a.body)
	}
	// Without the bus it would wait for its fallback scan (10 s).
	if d := a.at.Sub(started); d > 3*time.Second {
		t.Errorf("the claim on api-2 woke %v after the start on api-1: NATS did not carry the hint", d)
	}
	t.Logf("run started on api-1, claim held on api-2 woke after %v", a.at.Sub(started).Round(time.Millisecond))

	// The rest through the proxy, alternating instances.
	base := "http://" + addr
	l := leases.Leases[0]
	call(t, base, "/steps/"+l.ID+"/started", nil)
	call(t, base, "/steps/"+l.ID+"/complete", map[string]any{"output": 1})
	json.Unmarshal(call(t, base, "/steps/claim", map[string]any{"worker_id": "w", "run": run.Run.ID, "wait_ms": 5000}), &leases)
	if len(leases.Leases) != 1 || leases.Leases[0].Step != "b" {
		t.Fatalf("claim b: %+v", leases)
	}
	l = leases.Leases[0]
	call(t, base, "/steps/"+l.ID+"/started", nil)
	call(t, base, "/steps/"+l.ID+"/complete", map[string]any{"output": 2})
	resp, err := http.Get(base + "/v1/api/runs/" + run.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Status string }
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if r.Status != "completed" {
		t.Fatalf("run %s", r.Status)
	}
}
