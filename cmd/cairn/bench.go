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
	// work is in flight elsewhere), one sample per lease it returned;
	// complete is the complete call (with claim_next: its inline lease
	// included), started + complete without claim_next.
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
	// ClaimNext is whether each complete asked for its loop's next lease
	// (claim_next), as the Go SDK's worker does.
	ClaimNext bool `json:"claim_next"`
}

// benchOptions are the flags of `cairn bench`.
type benchOptions struct {
	store, profile, shape string
	runs, width, workers  int
	scale                 float64
	asJSON                bool
	traceMode             string
	layout                string
	claimNext             bool
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
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
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.store, "store", "", "bucket URL (default: a temporary directory)")
	f.StringVar(&o.profile, "profile", "none", "cloud shape: none, s3 or gcs")
	f.Float64Var(&o.scale, "scale", 1, "time scale of the profile (0.1 runs ten times faster)")
	f.StringVar(&o.shape, "shape", "linear", "linear (a chain of --width steps) or fanout (--width parallel steps and a join)")
	f.IntVar(&o.runs, "runs", 20, "runs to start")
	f.IntVar(&o.width, "width", 10, "steps per run (linear) or parallel steps (fanout)")
	f.IntVar(&o.workers, "workers", 8, "concurrent claim loops")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.StringVar(&o.traceMode, "trace", "off", "off, or mem: record the engine's spans into memory (to measure tracing's overhead)")
	f.StringVar(&o.layout, "layout", engine.KeyLayoutFlat, "key layout the engine writes: flat or sharded (CAIRN_KEY_LAYOUT)")
	f.BoolVar(&o.claimNext, "claim-next", true, "work as the Go SDK's worker does: each claim loop holds a claim for one lease, then each complete asks for the next (claim_next), with no started (an at_least_once step is started by its claim); false: claim up to 4, then started and complete each")
	return cmd
}

// run opens the store (a temporary directory when none is named), shapes
// it like the profile, counts its requests, records spans as asked, runs
// the bench on it and prints the report to out.
func (o benchOptions) run(ctx context.Context, out io.Writer) error {
	store := o.store
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
	prof, err := benchProfile(o.profile, o.scale)
	if err != nil {
		return err
	}
	shaped, ctl := faults.Wrap(b, prof)
	counted, counts := counting.Wrap(shaped)
	tr, err := newBenchTrace(o.traceMode)
	if err != nil {
		return err
	}
	defer tr.shutdown()
	if tr.tel != nil {
		counted = telemetry.WrapBucket(counted, tr.tel)
	}
	rep, err := runBench(ctx, counted, counts, benchParams{shape: o.shape, runs: o.runs, width: o.width, workers: o.workers, claimNext: o.claimNext}, tr.tel, o.layout)
	if err != nil {
		return err
	}
	rep.Trace, rep.Spans = tr.mode, tr.recorded(ctx)
	rep.Store, rep.Profile, rep.Throttled, rep.Layout = redactURL(store), o.profile, ctl.Stats().Throttled, o.layout
	if o.profile != "" && o.profile != "none" {
		rep.Profile = fmt.Sprintf("%s ×%g", o.profile, o.scale)
	}
	return printBench(out, rep, o.asJSON)
}

// benchProfile is the cloud shape --profile names, its time scaled.
func benchProfile(profile string, scale float64) (faults.Profile, error) {
	switch profile {
	case "", "none":
		return faults.Profile{}, nil
	case "s3":
		return faults.S3.Scaled(scale), nil
	case "gcs":
		return faults.GCS.Scaled(scale), nil
	default:
		return faults.Profile{}, fmt.Errorf("--profile %q: want none, s3 or gcs", profile)
	}
}

// benchTrace is how the bench records the engine's spans (--trace): off,
// or into memory.
type benchTrace struct {
	mode  string
	tel   *telemetry.T // nil when off
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
}

func newBenchTrace(mode string) (*benchTrace, error) {
	switch mode {
	case "", "off":
		return &benchTrace{mode: "off"}, nil
	case "mem":
		// Spans as they would go to a collector, but kept in
		// memory: the engine's cost of tracing, not a network's.
		t := &benchTrace{mode: mode, spans: tracetest.NewInMemoryExporter()}
		t.tp = otelsetup.NewTracerProvider(sdktrace.WithBatcher(t.spans, sdktrace.WithMaxQueueSize(1<<20)))
		var err error
		if t.tel, err = telemetry.New(t.tp, nil); err != nil {
			t.shutdown()
			return nil, err
		}
		return t, nil
	default:
		return nil, fmt.Errorf("--trace %q: want off or mem", mode)
	}
}

func (t *benchTrace) shutdown() {
	if t.tp != nil {
		t.tp.Shutdown(context.Background())
	}
}

// recorded is how many spans were recorded, once flushed.
func (t *benchTrace) recorded(ctx context.Context) int {
	if t.spans == nil {
		return 0
	}
	t.tp.ForceFlush(ctx)
	return len(t.spans.GetSpans())
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

// benchParams is the load a bench runs: runs of a shape, worked by
// claim loops.
type benchParams struct {
	shape       string
	runs, width int
	workers     int
	claimNext   bool
}

func runBench(ctx context.Context, store *blob.Bucket, counts *counting.Counts, p benchParams, tel *telemetry.T, layout string) (*benchReport, error) {
	shape, runs, width, workers := p.shape, p.runs, p.width, p.workers
	wf, err := benchWorkflow(shape, width)
	if err != nil {
		return nil, err
	}
	e, err := engine.New(store, engine.Config{Logger: quietLogger(), Telemetry: tel, KeyLayout: layout})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if err := primeBench(ctx, e, wf); err != nil {
		return nil, err
	}
	counts.Reset()
	total := runs * len(wf.Steps)
	start := time.Now()
	ids := make([]string, runs)
	for i := range runs {
		r, err := e.StartRun(ctx, cairn.StartRequest{Workflow: wf.Name, Version: wf.Version})
		if err != nil {
			return nil, err
		}
		ids[i] = r.Run.ID
	}
	load := &benchLoad{total: int64(total), claimNext: p.claimNext}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			load.work(ctx, e)
		})
	}
	wg.Wait()
	if load.firstErr != nil {
		return nil, load.firstErr
	}
	elapsed := time.Since(start)
	ops := counts.Snapshot()
	revs, err := benchRunWrites(ctx, e, ids)
	if err != nil {
		return nil, err
	}
	n := float64(total)
	return &benchReport{
		Shape: fmt.Sprintf("%s×%d", shape, width), Runs: runs, Steps: total, Workers: workers, ClaimNext: p.claimNext,
		Seconds: elapsed.Seconds(), StepsPerSec: n / elapsed.Seconds(),
		GetPerStep: float64(ops.Reads()) / n, PutClassPerStep: float64(ops.PutClass()) / n,
		ListPerStep: float64(ops.List) / n, DeletePerStep: float64(ops.Delete) / n,
		RunWritesPerStep: float64(revs) / n,
		ClaimP50Ms:       pct(load.claimLat, 0.5), ClaimP99Ms: pct(load.claimLat, 0.99),
		CompleteP50Ms: pct(load.completeLat, 0.5), CompleteP99Ms: pct(load.completeLat, 0.99),
		USDPerMillionSteps: ops.Cost() / n * 1e6,
	}, nil
}

// primeBench registers the bench's workflow and makes the requests that
// are not per step (the instance's first fallback scan, the worker's
// sighting) before the counts are reset.
func primeBench(ctx context.Context, e *engine.Engine, wf cairn.Workflow) error {
	if _, err := e.Register(ctx, cairn.RegisterRequest{WorkerID: "bench", Workflows: []cairn.Workflow{wf}}); err != nil {
		return err
	}
	// One claim first: the instance's first fallback scan is not per step.
	if _, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "bench"}); err != nil {
		return err
	}
	e.Settle() // the worker's sighting is per minute, not per step
	return nil
}

// benchLoad is what the bench's claim loops share: the steps to do and
// done, the latencies measured, and the error that stopped a loop.
type benchLoad struct {
	total                 int64
	claimNext             bool
	done                  atomic.Int64
	mu                    sync.Mutex
	claimLat, completeLat []time.Duration
	firstErr              error
}

// work is one claim loop, until every step is done or a call fails.
// With claim_next it is one slot of the Go SDK's worker: a held claim for
// one lease when it has none, then a complete that asks for the next
// (the engine leases a step the complete makes ready in the run record's
// own write). Without, it claims up to 4 leases and runs each: started,
// then complete.
func (b *benchLoad) work(ctx context.Context, e *engine.Engine) {
	if b.claimNext {
		b.workEager(ctx, e)
		return
	}
	for b.done.Load() < b.total {
		t0 := time.Now()
		ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "bench", Max: 4, WaitMs: 1000})
		if err != nil {
			b.fail(err)
			return
		}
		if len(ls) == 0 {
			continue
		}
		cl := time.Since(t0)
		for _, l := range ls {
			t1 := time.Now()
			if err := runBenchStep(ctx, e, l.ID); err != nil {
				b.fail(err)
				return
			}
			b.mu.Lock()
			b.claimLat = append(b.claimLat, cl)
			b.completeLat = append(b.completeLat, time.Since(t1))
			b.mu.Unlock()
			b.done.Add(1)
		}
	}
}

// workEager is work with claim_next.
func (b *benchLoad) workEager(ctx context.Context, e *engine.Engine) {
	var next []cairn.Lease
	for b.done.Load() < b.total {
		if len(next) == 0 {
			t0 := time.Now()
			ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "bench", Max: 1, WaitMs: 1000})
			if err != nil {
				b.fail(err)
				return
			}
			cl := time.Since(t0)
			b.mu.Lock()
			for range ls {
				b.claimLat = append(b.claimLat, cl)
			}
			b.mu.Unlock()
			next = ls
			continue
		}
		l := next[0]
		next = next[1:]
		t1 := time.Now()
		ls, err := completeBenchStep(ctx, e, l.ID, &cairn.ClaimNext{Max: 1})
		if err != nil {
			b.fail(err)
			return
		}
		b.mu.Lock()
		b.completeLat = append(b.completeLat, time.Since(t1))
		b.mu.Unlock()
		b.done.Add(1)
		next = append(next, ls...)
	}
}

func (b *benchLoad) fail(err error) {
	b.mu.Lock()
	b.firstErr = err
	b.mu.Unlock()
}

// runBenchStep runs one lease's no-op step: started, then complete,
// retried while the engine is unavailable. A complete that already
// applied counts as done.
func runBenchStep(ctx context.Context, e *engine.Engine, lease string) error {
	if _, err := e.Started(ctx, lease); err != nil {
		return fmt.Errorf("started: %w", err)
	}
	_, err := completeBenchStep(ctx, e, lease, nil)
	return err
}

// completeBenchStep completes a lease's no-op step, retried while the
// engine is unavailable, and returns the leases its claim_next (if any)
// was granted. A complete that already applied counts as done (and
// grants nothing: the loop claims again).
func completeBenchStep(ctx context.Context, e *engine.Engine, lease string, next *cairn.ClaimNext) ([]cairn.Lease, error) {
	var ended *cairn.Ended
	var err error
	for {
		ended, err = e.Complete(ctx, lease, cairn.CompleteRequest{Output: json.RawMessage(`null`), ClaimNext: next})
		if _, unavailable := err.(*engine.UnavailableError); !unavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		if reason, _ := engine.IsRejection(err); reason != cairn.ReasonAlreadyApplied {
			return nil, fmt.Errorf("complete: %w", err)
		}
		return nil, nil
	}
	return ended.Leases, nil
}

// benchRunWrites checks that every run completed and counts the writes of
// their run records (read after the counts, in whichever key layout the
// runs were written).
func benchRunWrites(ctx context.Context, e *engine.Engine, ids []string) (revs int64, _ error) {
	for _, id := range ids {
		r, err := e.GetRun(ctx, id)
		if err != nil {
			return 0, err
		}
		if r.Status != cairn.RunCompleted {
			return 0, fmt.Errorf("run %s ended %s", id, r.Status)
		}
	}
	// Rev counts a run record's writes.
	for _, id := range ids {
		p, err := e.GetRunStatus(ctx, id, 0, 0)
		if err != nil {
			return 0, err
		}
		revs += p.Rev
	}
	return revs, nil
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
	mode := "claim_next"
	if !r.ClaimNext {
		mode = "no claim_next"
	}
	fmt.Fprintf(w, "store %s, profile %s, %d runs of %s (%d steps), %d workers, %s\n", r.Store, r.Profile, r.Runs, r.Shape, r.Steps, r.Workers, mode)
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
