package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/sdk"
)

// result is one workload's line.
type result struct {
	target, workload string
	runs, steps      int
	elapsed          time.Duration
	// lat are the latencies the line reports as p50/p99, named by latName;
	// lat2 (named lat2Name) a second series, if any.
	latName, lat2Name string
	lat, lat2         []time.Duration
	cpu               time.Duration
	ops               counting.Snapshot
}

func pct(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return float64(s[max(i, 0)].Microseconds()) / 1000
}

func (r result) String() string {
	steps := float64(r.steps)
	var b strings.Builder
	fmt.Fprintf(&b, "%-14s %-7s runs=%-4d steps=%-5d secs=%-7.3f steps/s=%-7.0f", r.target, r.workload, r.runs, r.steps, r.elapsed.Seconds(), steps/r.elapsed.Seconds())
	if r.latName != "" {
		fmt.Fprintf(&b, " %s_p50_ms=%.2f %s_p99_ms=%.2f", r.latName, pct(r.lat, 50), r.latName, pct(r.lat, 99))
	}
	if r.lat2Name != "" {
		fmt.Fprintf(&b, " %s_p50_ms=%.2f %s_p99_ms=%.2f", r.lat2Name, pct(r.lat2, 50), r.lat2Name, pct(r.lat2, 99))
	}
	fmt.Fprintf(&b, " server_cpu_ms/step=%.2f get/step=%.2f put/step=%.2f list/step=%.2f delete/step=%.2f req/run=%.1f usd/Msteps=%.2f",
		float64(r.cpu.Microseconds())/1000/steps,
		float64(r.ops.Reads())/steps, float64(r.ops.Writes())/steps, float64(r.ops.List)/steps, float64(r.ops.Delete)/steps,
		float64(r.ops.Total())/float64(r.runs), r.ops.Cost()/steps*1e6)
	return b.String()
}

// benchTarget starts a server on t and a worker, and runs the workloads.
func benchTarget(ctx context.Context, t target, self string, o options, out io.Writer) error {
	srv, base, err := startServer(ctx, o.cairn, t)
	if err != nil {
		return err
	}
	defer srv.stop()
	w, err := startWorker(self, base, o.slots)
	if err != nil {
		return err
	}
	defer w.stop()
	c, err := sdk.NewClient(base)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	var lin *result // the linear workload's line, for the ceiling's
	for _, wl := range strings.Split(o.workloads, ",") {
		if strings.TrimSpace(wl) == "ceiling" {
			line, err := ceiling(ctx, t, o, lin)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, line)
			continue
		}
		var fn func(context.Context, *sdk.Client, options) (result, error)
		switch strings.TrimSpace(wl) {
		case "linear":
			fn = linear
		case "fanout":
			fn = fanout
		case "single":
			fn = single
		case "chain":
			fn = func(ctx context.Context, c *sdk.Client, o options) (result, error) {
				return oneByOne(ctx, c, o, "chain", wfChain)
			}
		case "function":
			fn = func(ctx context.Context, c *sdk.Client, o options) (result, error) {
				return oneByOne(ctx, c, o, "function", wfFunction)
			}
		default:
			return fmt.Errorf("--workloads: unknown workload %q", wl)
		}
		// Let the previous workload's stragglers (worker reports, the
		// reaper's pass) settle before measuring.
		time.Sleep(500 * time.Millisecond)
		ops0, err := blobCounts(base)
		if err != nil {
			return err
		}
		cpu0, err := srv.cpu()
		if err != nil {
			return err
		}
		prof := startProfile(base, o, t.name+"-"+strings.TrimSpace(wl))
		r, err := fn(ctx, c, o)
		if perr := prof(); perr != nil {
			fmt.Fprintln(os.Stderr, "e2e bench: cpu profile:", perr)
		}
		if err != nil {
			return fmt.Errorf("%s: %w\nserver log:\n%s\nworker log:\n%s", wl, err, srv.logs, w.logs)
		}
		cpu1, err := srv.cpu()
		if err != nil {
			return err
		}
		ops1, err := blobCounts(base)
		if err != nil {
			return err
		}
		r.target, r.cpu, r.ops = t.name, cpu1-cpu0, ops1.Sub(ops0)
		fmt.Fprintln(out, r)
		if r.workload == "linear" {
			lin = &r
		}
	}
	return nil
}

// wait waits for run to end and checks that it completed.
func wait(ctx context.Context, c *sdk.Client, id string) (*sdk.Run, error) {
	r, err := c.Wait(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status != sdk.RunCompleted {
		return nil, fmt.Errorf("%w: run %s is %s", errRun, id, r.Status)
	}
	return r, nil
}

// linear starts o.runs runs of five sequential steps at once, a client
// waiting on each, and times them all to completion; the latency is each
// run's start → its client saw it complete.
func linear(ctx context.Context, c *sdk.Client, o options) (result, error) {
	r := result{workload: "linear", runs: o.runs, steps: o.runs * linearSteps, latName: "run"}
	lat := make([]time.Duration, o.runs)
	errs := make([]error, o.runs)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range o.runs {
		wg.Go(func() {
			s := time.Now()
			run, err := c.Start(ctx, wfLinear, sdk.StartOptions{})
			if err == nil {
				_, err = wait(ctx, c, run.ID)
			}
			lat[i], errs[i] = time.Since(s), err
		})
	}
	wg.Wait()
	r.elapsed, r.lat = time.Since(t0), lat
	for _, err := range errs {
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// fanout runs one run of 200 parallel steps, o.fanoutReps times in turn;
// the latency is start → the client saw it complete.
func fanout(ctx context.Context, c *sdk.Client, o options) (result, error) {
	r := result{workload: "fanout", runs: o.fanoutReps, steps: o.fanoutReps * fanoutWidth, latName: "run"}
	return inTurn(ctx, c, r, wfFanout)
}

// oneByOne runs o.chainReps runs of wf (chainSteps sequential no-op
// steps: a DAG or a durable function) one after the other; the latency
// is start → the client saw it complete.
func oneByOne(ctx context.Context, c *sdk.Client, o options, name, wf string) (result, error) {
	r := result{workload: name, runs: o.chainReps, steps: o.chainReps * chainSteps, latName: "run"}
	return inTurn(ctx, c, r, wf)
}

// inTurn runs r.runs runs of wf one after the other, each started once
// the one before completed, into r: each run's latency (start → the
// client saw it complete) and the time they all took.
func inTurn(ctx context.Context, c *sdk.Client, r result, wf string) (result, error) {
	t0 := time.Now()
	for range r.runs {
		s := time.Now()
		run, err := c.Start(ctx, wf, sdk.StartOptions{})
		if err != nil {
			return r, err
		}
		if _, err := wait(ctx, c, run.ID); err != nil {
			return r, err
		}
		r.lat = append(r.lat, time.Since(s))
	}
	r.elapsed = time.Since(t0)
	return r, nil
}

// single runs o.singles one-step runs in turn, the worker idle (its claim
// held) before each: pickup is start request → the step's body began (its
// output, the worker's clock), done is start request → the client saw the
// run complete.
func single(ctx context.Context, c *sdk.Client, o options) (result, error) {
	r := result{workload: "single", runs: o.singles, steps: o.singles, latName: "pickup", lat2Name: "done"}
	var busy time.Duration
	for range o.singles {
		time.Sleep(20 * time.Millisecond) // the worker is back in a held claim
		s := time.Now()
		run, err := c.Start(ctx, wfSingle, sdk.StartOptions{})
		if err != nil {
			return r, err
		}
		got, err := wait(ctx, c, run.ID)
		if err != nil {
			return r, err
		}
		done := time.Since(s)
		busy += done
		var ns string
		if err := got.Decode(&ns); err != nil {
			return r, fmt.Errorf("run %s output %s: %w", run.ID, got.Output, err)
		}
		began, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			return r, err
		}
		r.lat = append(r.lat, time.Unix(0, began).Sub(s))
		r.lat2 = append(r.lat2, done)
	}
	r.elapsed = busy // steps/s over the time runs were in flight
	return r, nil
}

// createBucket creates a bucket on a MinIO with its default credentials.
func createBucket(ctx context.Context, endpoint, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cli := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("minioadmin", "minioadmin", ""),
	})
	_, err := cli.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	return err
}
