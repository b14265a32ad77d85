package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/telemetry"
	"github.com/cairn-dev/cairn/telemetry/otelsetup"
)

// benchReport is what `cairn bench` measures.
type benchReport struct {
	Store       string  `json:"store"`
	Layout      string  `json:"layout,omitempty"`
	Profile     string  `json:"profile"`
	Shape       string  `json:"shape"`
	Runs        int     `json:"runs"`
	Steps       int     `json:"steps"`
	Workers     int     `json:"workers"`
	Seconds     float64 `json:"seconds"`
	StepsPerSec float64 `json:"steps_per_second"`
	// Requests per step, by class.
	GetPerStep      float64 `json:"get_per_step"`
	PutClassPerStep float64 `json:"put_class_per_step"`
	ListPerStep     float64 `json:"list_per_step"`
	DeletePerStep   float64 `json:"delete_per_step"`
	// RunWritesPerStep is run-record writes per step: below 1 when group
	// commit folds completions.
	RunWritesPerStep float64 `json:"run_record_writes_per_step"`
	// Latencies: claim is the whole claim call (including its hold while
	// work is in flight elsewhere), complete is started + complete.
	ClaimP50Ms    float64 `json:"claim_p50_ms"`
	ClaimP99Ms    float64 `json:"claim_p99_ms"`
	CompleteP50Ms float64 `json:"complete_p50_ms"`
	CompleteP99Ms float64 `json:"complete_p99_ms"`
	// USDPerMillionSteps prices the requests at S3 Standard rates.
	USDPerMillionSteps float64 `json:"usd_per_million_steps"`
	Throttled          int64   `json:"throttled_writes"`
	// Trace is how spans were recorded (off, mem) and Spans how many.
	Trace string `json:"trace"`
	Spans int    `json:"spans,omitempty"`
}

func newBenchCmd() *cobra.Command {
	var (
		store, profile, shape string
		runs, width, workers  int
		scale                 float64
		asJSON                bool
		traceMode             string
		layout                string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the engine on a store: steps/s, blob requests per step, run-record writes, latencies",
		Long: `bench runs workflows of no-op steps through an in-process engine with
in-process workers (no HTTP) against a store, optionally shaped like a cloud
(--profile s3 or gcs: latency and per-object write limits, time scaled by
--scale), and reports throughput, blob requests per step by price class,
run-record writes per step (group commit), claim and complete latencies, and
the request cost per million steps at S3 prices.

  cairn bench                                    # a temporary directory store
  cairn bench --store mem:// --shape fanout --width 200 --profile gcs --scale 0.2
  cairn bench --store 's3://bucket?endpoint=http://127.0.0.1:9000&use_path_style=true'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if store == "" {
				dir, err := os.MkdirTemp("", "cairn-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				store = "file://" + filepath.ToSlash(dir)
			}
			b, err := blob.OpenBucket(ctx, store)
			if err != nil {
				return err
			}
			defer b.Close()
			var prof faults.Profile
			switch profile {
			case "", "none":
			case "s3":
				prof = faults.S3.Scaled(scale)
			case "gcs":
				prof = faults.GCS.Scaled(scale)
			default:
				return fmt.Errorf("--profile %q: want none, s3 or gcs", profile)
			}
			shaped, ctl := faults.Wrap(b, prof)
			counted, counts := counting.Wrap(shaped)
			var tel *telemetry.T
			var spans *tracetest.InMemoryExporter
			var tp *sdktrace.TracerProvider
			switch traceMode {
			case "", "off":
				traceMode = "off"
			case "mem":
				// Spans as they would go to a collector, but kept in
				// memory: the engine's cost of tracing, not a network's.
				spans = tracetest.NewInMemoryExporter()
				tp = otelsetup.NewTracerProvider(sdktrace.WithBatcher(spans, sdktrace.WithMaxQueueSize(1<<20)))
				defer tp.Shutdown(context.Background())
				if tel, err = telemetry.New(tp, nil); err != nil {
					return err
				}
				counted = telemetry.WrapBucket(counted, tel)
			default:
				return fmt.Errorf("--trace %q: want off or mem", traceMode)
			}
			rep, err := runBench(ctx, counted, counts, shape, runs, width, workers, tel, layout)
			if err != nil {
				return err
			}
			rep.Trace = traceMode
			if spans != nil {
				tp.ForceFlush(ctx)
				rep.Spans = len(spans.GetSpans())
			}
			rep.Store, rep.Profile, rep.Throttled, rep.Layout = redactURL(store), profile, ctl.Stats().Throttled, layout
			if profile != "" && profile != "none" {
				rep.Profile = fmt.Sprintf("%s ×%g", profile, scale)
			}
			return printBench(cmd.OutOrStdout(), rep, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&store, "store", "", "bucket URL (default: a temporary directory)")
	f.StringVar(&profile, "profile", "none", "cloud shape: none, s3 or gcs")
	f.Float64Var(&scale, "scale", 1, "time scale of the profile (0.1 runs ten times faster)")
	f.StringVar(&shape, "shape", "linear", "linear (a chain of --width steps) or fanout (--width parallel steps and a join)")
	f.IntVar(&runs, "runs", 20, "runs to start")
	f.IntVar(&width, "width", 10, "steps per run (linear) or parallel steps (fanout)")
	f.IntVar(&workers, "workers", 8, "concurrent claim loops")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&traceMode, "trace", "off", "off, or mem: record the engine's spans into memory (to measure tracing's overhead)")
	f.StringVar(&layout, "layout", engine.KeyLayoutFlat, "key layout the engine writes: flat or sharded (CAIRN_KEY_LAYOUT)")
	return cmd
}

func benchWorkflow(shape string, width int) (cairn.Workflow, error) {
	w := cairn.Workflow{Name: "bench-" + shape, Version: fmt.Sprint(width)}
	switch shape {
	case "linear":
		for i := range width {
			s := cairn.Step{ID: fmt.Sprintf("s%04d", i)}
			if i > 0 {
				s.After = []string{w.Steps[i-1].ID}
			}
			w.Steps = append(w.Steps, s)
		}
	case "fanout":
		var ids []string
		for i := range width {
			id := fmt.Sprintf("p%04d", i)
			ids = append(ids, id)
			w.Steps = append(w.Steps, cairn.Step{ID: id})
		}
		w.Steps = append(w.Steps, cairn.Step{ID: "join", After: ids})
	default:
		return w, fmt.Errorf("--shape %q: want linear or fanout", shape)
	}
	return w, nil
}

func runBench(ctx context.Context, store *blob.Bucket, counts *counting.Counts, shape string, runs, width, workers int, tel *telemetry.T, layout string) (*benchReport, error) {
	wf, err := benchWorkflow(shape, width)
	if err != nil {
		return nil, err
	}
	e, err := engine.New(store, engine.Config{Logger: quietLogger(), Telemetry: tel, KeyLayout: layout})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if _, err := e.Register(ctx, engine.RegisterRequest{WorkerID: "bench", Workflows: []cairn.Workflow{wf}}); err != nil {
		return nil, err
	}
	// One claim first: the instance's first fallback scan is not per step.
	if _, err := e.Claim(ctx, engine.ClaimRequest{WorkerID: "bench"}); err != nil {
		return nil, err
	}
	e.Settle() // the worker's sighting is per minute, not per step
	counts.Reset()
	total := runs * len(wf.Steps)
	start := time.Now()
	ids := make([]string, runs)
	for i := range runs {
		r, err := e.StartRun(ctx, engine.StartRequest{Workflow: wf.Name, Version: wf.Version})
		if err != nil {
			return nil, err
		}
		ids[i] = r.Run.ID
	}
	var (
		done                  atomic.Int64
		mu                    sync.Mutex
		claimLat, completeLat []time.Duration
		firstErr              error
		wg                    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(total) {
				t0 := time.Now()
				ls, err := e.Claim(ctx, engine.ClaimRequest{WorkerID: "bench", Max: 4, WaitMs: 1000})
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				if len(ls) == 0 {
					continue
				}
				cl := time.Since(t0)
				for _, l := range ls {
					t1 := time.Now()
					if _, err := e.Started(ctx, l.ID); err != nil {
						mu.Lock()
						firstErr = fmt.Errorf("started: %w", err)
						mu.Unlock()
						return
					}
					for {
						_, err = e.Complete(ctx, l.ID, engine.CompleteRequest{Output: json.RawMessage(`null`)})
						if _, unavailable := err.(*engine.UnavailableError); !unavailable {
							break
						}
						time.Sleep(50 * time.Millisecond)
					}
					if reason, _ := engine.IsRejection(err); err != nil && reason != cairn.ReasonAlreadyApplied {
						mu.Lock()
						firstErr = fmt.Errorf("complete: %w", err)
						mu.Unlock()
						return
					}
					mu.Lock()
					claimLat = append(claimLat, cl)
					completeLat = append(completeLat, time.Since(t1))
					mu.Unlock()
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	elapsed := time.Since(start)
	ops := counts.Snapshot()
	var revs int64
	for _, id := range ids {
		r, err := e.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.Status != cairn.RunCompleted {
			return nil, fmt.Errorf("run %s ended %s", id, r.Status)
		}
	}
	// Rev counts a run record's writes (read after the counts above, in
	// whichever key layout the run was written).
	for _, id := range ids {
		p, err := e.GetRunStatus(ctx, id, 0, 0)
		if err != nil {
			return nil, err
		}
		revs += p.Rev
	}
	n := float64(total)
	return &benchReport{
		Shape: fmt.Sprintf("%s×%d", shape, width), Runs: runs, Steps: total, Workers: workers,
		Seconds: elapsed.Seconds(), StepsPerSec: n / elapsed.Seconds(),
		GetPerStep: float64(ops.Reads()) / n, PutClassPerStep: float64(ops.PutClass()) / n,
		ListPerStep: float64(ops.List) / n, DeletePerStep: float64(ops.Delete) / n,
		RunWritesPerStep: float64(revs) / n,
		ClaimP50Ms:       pct(claimLat, 0.5), ClaimP99Ms: pct(claimLat, 0.99),
		CompleteP50Ms: pct(completeLat, 0.5), CompleteP99Ms: pct(completeLat, 0.99),
		USDPerMillionSteps: ops.Cost() / n * 1e6,
	}, nil
}

func pct(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
}

func printBench(w io.Writer, r *benchReport, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	fmt.Fprintf(w, "store %s, profile %s, %d runs of %s (%d steps), %d workers\n", r.Store, r.Profile, r.Runs, r.Shape, r.Steps, r.Workers)
	fmt.Fprintf(w, "  %.0f steps/s (%.2fs)\n", r.StepsPerSec, r.Seconds)
	if r.Trace == "mem" {
		fmt.Fprintf(w, "  tracing into memory: %d spans\n", r.Spans)
	}
	fmt.Fprintf(w, "  per step: %.2f GET/HEAD, %.2f PUT-class (%.2f LIST), %.2f DELETE; %.3f run-record writes\n",
		r.GetPerStep, r.PutClassPerStep, r.ListPerStep, r.DeletePerStep, r.RunWritesPerStep)
	fmt.Fprintf(w, "  claim p50 %.2f ms p99 %.2f ms; complete p50 %.2f ms p99 %.2f ms\n", r.ClaimP50Ms, r.ClaimP99Ms, r.CompleteP50Ms, r.CompleteP99Ms)
	fmt.Fprintf(w, "  store requests: $%.2f per million steps at S3 Standard prices", r.USDPerMillionSteps)
	if r.Throttled > 0 {
		fmt.Fprintf(w, "; %d writes throttled", r.Throttled)
	}
	fmt.Fprintln(w)
	return nil
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// redactURL hides credentials in a URL for display.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User(u.User.Username())
	return u.String()
}
