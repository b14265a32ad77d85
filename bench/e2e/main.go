// Command e2e is cairn's HTTP end-to-end benchmark: the server (`cairn
// serve`, the real binary) and a worker (this program re-executed, the Go
// SDK with 8 slots) run as separate processes, and this process drives
// workloads through the Go SDK client, as a new user would. Per target
// (file store, MinIO, an in-memory store shaped like S3 or GCS) it prints
// one line per workload — steps/s, latencies, server CPU per step, blob
// requests per step by price class, and S3 request cost per million
// steps — and appends them to a results file. The ceiling workload
// measures the store itself: its conditional-write rate at the worker's
// concurrency, and the linear steps a second that rate allows (ceiling.go).
//
//	go run ./bench/e2e --targets file,minio,s3,gcs --out bench/results.txt
//
// The server counts its blob requests when CAIRN_BENCH_STATS=1 and serves
// them at /debug/cairn/blobcounts (internal/app); the profiles are applied
// in the server by CAIRN_BENCH_PROFILE and CAIRN_BENCH_SCALE.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/blob/counting"
)

const workerRole = "CAIRN_E2E_BENCH_WORKER"

func main() {
	if server := os.Getenv(workerRole); server != "" {
		slots, _ := strconv.Atoi(os.Getenv("CAIRN_E2E_BENCH_SLOTS"))
		os.Exit(workerMain(server, max(slots, 1)))
	}
	var o options
	flag.StringVar(&o.cairn, "cairn", "", "the cairn binary (default: go build ./cmd/cairn into a temporary directory)")
	flag.StringVar(&o.targets, "targets", "file,minio,s3,gcs", "comma-separated: file (fsync), minio, s3 (mem:// shaped like S3), gcs (mem:// shaped like GCS)")
	flag.StringVar(&o.workloads, "workloads", "linear,fanout,single", "comma-separated: linear, fanout, single, chain (one 1,000-step linear DAG run at a time), function (one durable function of 1,000 steps at a time), ceiling (the store's own conditional-write rate at --slots writers, and the linear steps/s it allows)")
	flag.StringVar(&o.minio, "minio", "http://127.0.0.1:9000", "MinIO endpoint for the minio target (scripts/testenv.sh minio starts one; credentials minioadmin)")
	flag.Float64Var(&o.scale, "scale", 1, "time scale of the s3/gcs profiles (0.1 runs ten times faster)")
	flag.IntVar(&o.slots, "slots", 8, "worker slots")
	flag.IntVar(&o.runs, "runs", 200, "linear: runs started at once (5 steps each)")
	flag.IntVar(&o.fanoutReps, "fanout-reps", 3, "fan-out: runs, one after the other (latencies over them)")
	flag.IntVar(&o.singles, "singles", 50, "single: one-step runs, one after the other, the worker idle before each")
	flag.IntVar(&o.chainReps, "chain-reps", 3, "chain and function: runs of 1,000 steps, one after the other")
	flag.DurationVar(&o.ceilingFor, "ceiling-for", 3*time.Second, "ceiling: how long the writers swap")
	flag.StringVar(&o.out, "out", "", "append the result lines to this file")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write the server's CPU profile of each workload (its first --profile-secs) to this directory as <target>-<workload>.pprof (go tool pprof -top)")
	flag.IntVar(&o.profileSecs, "profile-secs", 5, "with --cpuprofile: seconds of each workload profiled")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "e2e bench:", err)
		os.Exit(1)
	}
}

type options struct {
	cairn, targets, workloads, minio, out string
	scale                                 float64
	slots, runs, fanoutReps, singles      int
	chainReps                             int
	ceilingFor                            time.Duration
	cpuprofile                            string
	profileSecs                           int
}

// startProfile starts profiling the server's CPU for o.profileSecs when
// o.cpuprofile is set; the returned func waits for the profile and writes
// it as <dir>/<name>.pprof.
func startProfile(server string, o options, name string) func() error {
	if o.cpuprofile == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", server, o.profileSecs))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s", resp.Status)
			return
		}
		if err := os.MkdirAll(o.cpuprofile, 0o755); err != nil {
			done <- err
			return
		}
		f, err := os.Create(filepath.Join(o.cpuprofile, name+".pprof"))
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		_, err = io.Copy(f, resp.Body)
		done <- err
	}()
	return func() error { return <-done }
}

func run(ctx context.Context, o options) error {
	tmp, err := os.MkdirTemp("", "cairn-e2e-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.cairn == "" {
		o.cairn = filepath.Join(tmp, "cairn")
		build := exec.Command("go", "build", "-o", o.cairn, "./cmd/cairn")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/cairn (run from the repository root): %w", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var out io.Writer = os.Stdout
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
		fmt.Fprintf(f, "# %s cairn e2e bench, %s/%s, %d CPUs, %s\n", time.Now().UTC().Format(time.RFC3339),
			runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), gitDescribe())
	}
	for _, target := range strings.Split(o.targets, ",") {
		t, err := newTarget(ctx, strings.TrimSpace(target), tmp, o)
		if err != nil {
			return err
		}
		if err := benchTarget(ctx, t, self, o, out); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return nil
}

// target is a store the server runs on.
type target struct {
	name string
	env  []string // the server's environment on top of ours
	// store is the store's URL for the ceiling workload, which writes to
	// it directly; empty when the store lives in the server's process.
	store string
}

func newTarget(ctx context.Context, name, tmp string, o options) (target, error) {
	t := target{name: name}
	switch name {
	case "file":
		dir, err := os.MkdirTemp(tmp, "store-")
		if err != nil {
			return t, err
		}
		t.store = "file://" + filepath.ToSlash(dir)
		t.env = []string{"CAIRN_BLOB=" + t.store}
	case "minio":
		bucket := fmt.Sprintf("e2e-bench-%d", time.Now().UnixNano())
		if err := createBucket(ctx, o.minio, bucket); err != nil {
			return t, fmt.Errorf("minio at %s (start one with scripts/testenv.sh minio): %w", o.minio, err)
		}
		t.store = "s3://" + bucket + "?region=us-east-1&use_path_style=true&endpoint=" + o.minio
		t.env = []string{
			"CAIRN_BLOB=" + t.store,
			"AWS_ACCESS_KEY_ID=minioadmin", "AWS_SECRET_ACCESS_KEY=minioadmin",
		}
	case "s3", "gcs":
		t.name = fmt.Sprintf("mem+%s×%g", name, o.scale)
		t.env = []string{"CAIRN_BLOB=mem://", "CAIRN_BENCH_PROFILE=" + name, "CAIRN_BENCH_SCALE=" + fmt.Sprint(o.scale)}
	default:
		return t, fmt.Errorf("--targets: unknown target %q (want file, minio, s3 or gcs)", name)
	}
	return t, nil
}

// proc is a child process that ends with the bench.
type proc struct {
	cmd  *exec.Cmd
	logs *bytes.Buffer
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// cpu returns the CPU time the process has used so far (user + system),
// from /proc/PID/stat (in USER_HZ, 100 per second on Linux).
func (p *proc) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("server CPU (Linux /proc only): %w", err)
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %q", b)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startServer(ctx context.Context, bin string, t target) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "serve", "--dev", "--addr", addr, "--reap-every", "1s")
	cmd.Env = append(append(os.Environ(), "CAIRN_BENCH_STATS=1", "CAIRN_LOG_LEVEL=warn"), t.env...)
	p := &proc{cmd: cmd, logs: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/api/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, base, nil
			}
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			p.stop()
			return nil, "", fmt.Errorf("server did not answer on %s: %v\n%s", addr, err, p.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startWorker(self, server string, slots int) (*proc, error) {
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), workerRole+"="+server, "CAIRN_E2E_BENCH_SLOTS="+strconv.Itoa(slots))
	p := &proc{cmd: cmd, logs: &bytes.Buffer{}}
	cmd.Stderr = p.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		io.Copy(io.Discard, stdout)
	}()
	select {
	case ok := <-ready:
		if ok {
			return p, nil
		}
	case <-time.After(30 * time.Second):
	}
	p.stop()
	return nil, fmt.Errorf("worker did not become ready:\n%s", p.logs)
}

// blobCounts reads the server's blob request counts.
func blobCounts(server string) (counting.Snapshot, error) {
	var s counting.Snapshot
	resp, err := http.Get(server + "/debug/cairn/blobcounts")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return s, fmt.Errorf("blob counts: %s (is the server built with the bench hooks?)", resp.Status)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown commit"
	}
	return strings.TrimSpace(string(out))
}

var errRun = errors.New("run did not complete")
