// Command compare runs bench/e2e's workloads against a Temporal dev server
// (`temporal server start-dev --headless`, SQLite on disk, 127.0.0.1) with
// the Temporal Go SDK, and prints the same columns as bench/e2e where they
// apply: steps/s, latency percentiles and the server's CPU per step (from
// /proc of the server's pid). Blob request counts have no Temporal
// equivalent. It is a module of its own so that cairn's module does not
// depend on the Temporal SDK; `make bench-compare` builds the server and
// runs it. Never part of make test.
//
//	go run . --temporal /path/to/temporal --out ../results.txt
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const (
	queue       = "bench"
	linearSteps = 5
	fanoutWidth = 200
)

type options struct {
	temporal, out, workloads string
	slots, runs, fanoutReps  int
	singles                  int
}

func main() {
	var o options
	flag.StringVar(&o.temporal, "temporal", "temporal", "the temporal CLI (make bench-compare builds v1.5.1)")
	flag.StringVar(&o.workloads, "workloads", "linear,fanout,single", "comma-separated: linear, fanout, single")
	flag.IntVar(&o.slots, "slots", 8, "worker activity slots (as bench/e2e's worker)")
	flag.IntVar(&o.runs, "runs", 200, "linear: runs started at once (5 steps each)")
	flag.IntVar(&o.fanoutReps, "fanout-reps", 3, "fan-out: runs of 200 parallel steps, one after the other")
	flag.IntVar(&o.singles, "singles", 50, "single: one-step runs, one after the other, the worker idle before each")
	flag.StringVar(&o.out, "out", "", "append the result lines to this file")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// Step is the no-op activity: it returns when its body began (ns).
func Step(ctx context.Context, _ int) (string, error) {
	return strconv.FormatInt(time.Now().UnixNano(), 10), nil
}

func actx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
}

// Linear runs five steps in sequence.
func Linear(ctx workflow.Context) (string, error) {
	var out string
	for i := range linearSteps {
		if err := workflow.ExecuteActivity(actx(ctx), Step, i).Get(ctx, &out); err != nil {
			return "", err
		}
	}
	return out, nil
}

// Fanout runs 200 steps in parallel, then a join step.
func Fanout(ctx workflow.Context) (string, error) {
	fs := make([]workflow.Future, fanoutWidth)
	for i := range fs {
		fs[i] = workflow.ExecuteActivity(actx(ctx), Step, i)
	}
	for _, f := range fs {
		if err := f.Get(ctx, nil); err != nil {
			return "", err
		}
	}
	var out string
	return out, workflow.ExecuteActivity(actx(ctx), Step, -1).Get(ctx, &out)
}

// Single runs one step.
func Single(ctx workflow.Context) (string, error) {
	var out string
	return out, workflow.ExecuteActivity(actx(ctx), Step, 0).Get(ctx, &out)
}

func run(o options) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "cairn-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv := exec.Command(o.temporal, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(port), "--db-filename", filepath.Join(tmp, "temporal.db"), "--log-level", "error")
	var logs strings.Builder
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start %s: %w", o.temporal, err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	c, err := dial(ctx, addr, &logs)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := startWorker(c, o)
	if err != nil {
		return err
	}
	defer w.Stop()
	var out io.Writer = os.Stdout
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
		fmt.Fprintf(f, "# %s temporal dev server (%s), Go SDK, same workloads as bench/e2e\n", time.Now().UTC().Format(time.RFC3339), o.temporal)
	}
	// Warm up: the first workflow pays for the namespace's caches.
	if _, err := execute(ctx, c, Single); err != nil {
		return err
	}
	for _, wl := range strings.Split(o.workloads, ",") {
		time.Sleep(500 * time.Millisecond)
		r, err := measure(ctx, c, o, wl, srv.Process.Pid)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, r)
	}
	return nil
}

// dial connects to the Temporal dev server at addr once it answers its
// health check, within a minute; logs are the server's, for the error.
func dial(ctx context.Context, addr string, logs *strings.Builder) (client.Client, error) {
	for deadline := time.Now().Add(60 * time.Second); ; {
		c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet{}})
		if err == nil {
			if _, err = c.CheckHealth(ctx, &client.CheckHealthRequest{}); err == nil {
				return c, nil
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("temporal dev server at %s did not answer: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startWorker starts a worker of the workflows and the step activity,
// with o.slots activity slots.
func startWorker(c client.Client, o options) (worker.Worker, error) {
	w := worker.New(c, queue, worker.Options{MaxConcurrentActivityExecutionSize: o.slots})
	w.RegisterWorkflow(Linear)
	w.RegisterWorkflow(Fanout)
	w.RegisterWorkflow(Single)
	w.RegisterActivityWithOptions(Step, activity.RegisterOptions{Name: "Step"})
	if err := w.Start(); err != nil {
		return nil, err
	}
	return w, nil
}

// measure runs the workload wl and measures it, with the CPU time the
// server (process pid) spent on it.
func measure(ctx context.Context, c client.Client, o options, wl string, pid int) (result, error) {
	cpu0, err := procCPU(pid)
	if err != nil {
		return result{}, err
	}
	var r result
	switch strings.TrimSpace(wl) {
	case "linear":
		r, err = linear(ctx, c, o)
	case "fanout":
		r, err = fanout(ctx, c, o)
	case "single":
		r, err = single(ctx, c, o)
	default:
		return result{}, fmt.Errorf("--workloads: unknown workload %q", wl)
	}
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", wl, err)
	}
	cpu1, err := procCPU(pid)
	if err != nil {
		return result{}, err
	}
	r.cpu = cpu1 - cpu0
	return r, nil
}

type result struct {
	workload          string
	runs, steps       int
	elapsed, cpu      time.Duration
	latName, lat2Name string
	lat, lat2         []time.Duration
}

func pct(l []time.Duration, q float64) float64 {
	s := append([]time.Duration(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
}

func (r result) String() string {
	s := fmt.Sprintf("%-14s %-7s runs=%-4d steps=%-5d secs=%.3f steps/s=%-7.0f %s_p50_ms=%.2f %s_p99_ms=%.2f",
		"temporal-dev", r.workload, r.runs, r.steps, r.elapsed.Seconds(), float64(r.steps)/r.elapsed.Seconds(),
		r.latName, pct(r.lat, 0.5), r.latName, pct(r.lat, 0.99))
	if r.lat2Name != "" {
		s += fmt.Sprintf(" %s_p50_ms=%.2f %s_p99_ms=%.2f", r.lat2Name, pct(r.lat2, 0.5), r.lat2Name, pct(r.lat2, 0.99))
	}
	return s + fmt.Sprintf(" server_cpu_ms/step=%.2f", float64(r.cpu.Microseconds())/1000/float64(r.steps))
}

func execute(ctx context.Context, c client.Client, wf any) (string, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, wf)
	if err != nil {
		return "", err
	}
	var out string
	return out, run.Get(ctx, &out)
}

func linear(ctx context.Context, c client.Client, o options) (result, error) {
	r := result{workload: "linear", runs: o.runs, steps: o.runs * linearSteps, latName: "run"}
	r.lat = make([]time.Duration, o.runs)
	errs := make([]error, o.runs)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range o.runs {
		wg.Go(func() {
			s := time.Now()
			_, errs[i] = execute(ctx, c, Linear)
			r.lat[i] = time.Since(s)
		})
	}
	wg.Wait()
	r.elapsed = time.Since(t0)
	return r, errors.Join(errs...)
}

func fanout(ctx context.Context, c client.Client, o options) (result, error) {
	r := result{workload: "fanout", runs: o.fanoutReps, steps: o.fanoutReps * (fanoutWidth + 1), latName: "run"}
	t0 := time.Now()
	for range o.fanoutReps {
		s := time.Now()
		if _, err := execute(ctx, c, Fanout); err != nil {
			return r, err
		}
		r.lat = append(r.lat, time.Since(s))
	}
	r.elapsed = time.Since(t0)
	return r, nil
}

func single(ctx context.Context, c client.Client, o options) (result, error) {
	r := result{workload: "single", runs: o.singles, steps: o.singles, latName: "pickup", lat2Name: "done"}
	var busy time.Duration
	for range o.singles {
		time.Sleep(20 * time.Millisecond) // the worker is back polling
		s := time.Now()
		out, err := execute(ctx, c, Single)
		if err != nil {
			return r, err
		}
		done := time.Since(s)
		busy += done
		began, err := strconv.ParseInt(out, 10, 64)
		if err != nil {
			return r, err
		}
		r.lat = append(r.lat, time.Unix(0, began).Sub(s))
		r.lat2 = append(r.lat2, done)
	}
	r.elapsed = busy
	return r, nil
}

// procCPU is the user+system CPU time of pid and its threads (Linux).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("server CPU (Linux /proc only): %w", err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil // USER_HZ = 100
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// quiet drops the SDK's logs.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
