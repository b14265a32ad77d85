// Command scale runs the real engine — the same code `cairn serve` runs —
// on the simulated cloud store of blob/sim, with simulated API instances
// and workers in-process, and reports throughput, throttled requests,
// step latency, requests per step and cost over simulated time.
//
// Two scale factors make internet-scale loads fit one small machine
// (docs/SCALE.md, docs/DECISIONS.md):
//
//   - --scale f divides the load AND every partition's capacity by f, so
//     each partition meets its limit at the same ratio as at full size
//     (per-object limits are not divided: one object's write rate does not
//     depend on how many objects there are). Reported rates are multiplied
//     back by f.
//   - --speed k runs simulated time k times faster than the wall clock
//     (blob/sim.ScaledClock): the engine's clock, the store's limits and
//     latencies, the reaper period and the load generator all run on it.
//
// Usage:
//
//	go run ./bench/scale --scenario steady --model s3 --layout sharded
//	go run ./bench/scale --scenario burst --model s3 --layout flat --scale 100
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/blob/sim"
	"github.com/cairn-dev/cairn/engine"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

type options struct {
	scenario, model, layout string
	scale, speed            float64
	duration, warmup        time.Duration
	report                  time.Duration
	instances, workers      int
	fleet                   int
	burst                   float64
	noPacing                bool
	shedAbove               float64
	steps                   int
	stepsPerSec             float64
	burstRuns               int
	burstWindow             time.Duration
	warm                    time.Duration
	doubleEvery             time.Duration
	rampFrom                float64
	fanout                  int
	idleWorkers             int
	reapEvery               time.Duration
	seed                    uint64
	out                     string
	quiet                   bool
	claimNext               bool
}

func main() {
	var o options
	flag.StringVar(&o.scenario, "scenario", "steady", "steady, burst, fanout or idle")
	flag.StringVar(&o.model, "model", "s3", "store model: s3 or gcs")
	flag.StringVar(&o.layout, "layout", "sharded", "key layout: flat (today's) or sharded")
	flag.Float64Var(&o.scale, "scale", 500, "load and partition capacity divided by this (rates are reported ×scale)")
	flag.Float64Var(&o.speed, "speed", 10, "simulated seconds per wall second")
	flag.DurationVar(&o.duration, "duration", 0, "simulated length (0: the scenario's default)")
	flag.DurationVar(&o.warmup, "warmup", 0, "simulated time excluded from the summary (0: the scenario's default)")
	flag.DurationVar(&o.report, "report", time.Minute, "simulated time between report lines")
	flag.IntVar(&o.instances, "instances", 2, "engine instances (API functions) sharing the bucket and an in-process bus")
	flag.IntVar(&o.fleet, "fleet", 20, "full-size API instances the simulated ones stand for: each engine's fallback scans (its fixed requests, which the load's scaling does not divide) are spaced so that --instances of them cost what this many would at full size, divided by --scale (0: not spaced; every simulated instance scans as often as a real one; 20 is a Cloud Run service of 20 instances at concurrency 250)")
	flag.Float64Var(&o.burst, "burst", 0, "seconds of a partition's capacity it may take at once (0: the model's 1 s); see docs/SCALE.md on scaling and burstiness")
	flag.BoolVar(&o.noPacing, "no-pacing", false, "GCS: do not tell the engine the store's per-object write limit (engine.Config.ObjectWritesPerSecond), as before it spaced its record writes")
	flag.Float64Var(&o.shedAbove, "shed-above", 0, "engine.Config.ShedAbove: the share of refused writes above which an instance sheds new runs (0: the engine's default; negative: never)")
	flag.IntVar(&o.workers, "workers", 0, "simulated workers in all (0: enough for the load)")
	flag.IntVar(&o.steps, "steps", 5, "steady: linear steps per run")
	flag.Float64Var(&o.stepsPerSec, "steps-per-sec", 10000, "steady: full-size steps per second")
	flag.IntVar(&o.burstRuns, "burst-runs", 100000, "burst: full-size runs started")
	flag.DurationVar(&o.burstWindow, "burst-window", time.Minute, "burst: over this simulated time")
	flag.DurationVar(&o.warm, "warm", 50*time.Minute, "steady and burst: the steady load ramps up linearly over this simulated time (as S3 and GCS ask: the store splits partitions as the load grows); steady measures after it, burst starts its burst after it, on top of the steady load")
	flag.DurationVar(&o.doubleEvery, "double-every", 0, "steady and burst: ramp exponentially instead, from --ramp-from steps/s doubling every this simulated time up to --steps-per-sec (GCS ramps a bucket no faster than doubling every 20 minutes); --warm becomes the time the ramp takes")
	flag.Float64Var(&o.rampFrom, "ramp-from", 140, "with --double-every: full-size steps/s at the start (140 is half of what one GCS partition's 1,000 writes/s carries at 3.5 writes a step)")
	flag.IntVar(&o.fanout, "fanout", 10000, "fanout: parallel steps of the one run (not scaled)")
	flag.IntVar(&o.idleWorkers, "idle-workers", 5000, "idle: waiting workers (not scaled)")
	flag.DurationVar(&o.reapEvery, "reap-every", time.Minute, "simulated reaper period (the cloud templates' default)")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed of the store's latencies")
	flag.StringVar(&o.out, "out", "", "append the summary line to this file")
	flag.BoolVar(&o.quiet, "quiet", false, "summary only")
	flag.BoolVar(&o.claimNext, "claim-next", true, "workers complete with claim_next as the Go SDK's worker does (the engine leases a linear run's next step in the record's own write); false: complete, then claim again")
	flag.Parse()
	res, err := run(context.Background(), o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
	line := res.summary(o)
	fmt.Println(line)
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// fallbackInterval spaces each simulated instance's fallback scans so that
// the instances' scans are the requests --fleet real instances would make
// at full size, divided by the scale like the rest of the load: an
// instance scans at most once per engine.DefaultFallbackInterval, so --fleet
// of them make fleet/10 s scans at full size, fleet/(10 s × scale) once
// divided, and each of the --instances simulated engines must scan every
// 10 s × scale × instances / fleet. Without it, 2 simulated instances at
// 1/50 scan like 100 real ones, against the store's divided capacity.
func fallbackInterval(o options) time.Duration {
	if o.fleet <= 0 {
		return 0 // the engine's default
	}
	return time.Duration(float64(engine.DefaultFallbackInterval) * o.scale * float64(o.instances) / float64(o.fleet))
}

func objectRate(o options, m sim.Model) float64 {
	if o.noPacing {
		return 0
	}
	return m.WritesPerObjectPerSecond
}

// result is what a simulation measured after its warm-up.
type result struct {
	simTime      time.Duration
	steps        int64
	runsStarted  int64
	failedStarts int64
	counts       sim.Counts
	lat          []time.Duration
	first, next  []time.Duration // lat split: a run's first step, the steps after it
	partitions   int
	splits       int
	heldClaims   float64 // mean claims held (Lambda: environments busy waiting)
	throttled    float64
	hottest      int64
	byPrefix     map[string]sim.Counts
	retries      int64
}

func (r result) summary(o options) string {
	p50, p99 := pct(r.lat, 50), pct(r.lat, 99)
	perStep := func(n int64) float64 { return float64(n) / float64(max(r.steps, 1)) }
	steps := float64(r.steps) * o.scale / r.simTime.Seconds()
	usd := (perStep(r.counts.Writes+r.counts.Lists)*5 + perStep(r.counts.Reads)*0.4)
	var prefixes []string
	for k, c := range r.byPrefix {
		if c.Requests() > 0 {
			rate := func(n int64) float64 { return float64(n) * o.scale / r.simTime.Seconds() }
			prefixes = append(prefixes, fmt.Sprintf("%s=%.0fr+%.0fw+%.0fd/s(%.2f%%thr)", k, rate(c.Reads+c.Lists), rate(c.Writes), rate(c.Deletes), 100*float64(c.Throttled())/float64(c.Requests())))
		}
	}
	sort.Strings(prefixes)
	return fmt.Sprintf("scenario=%s model=%s layout=%s scale=%g speed=%g claim_next=%v sim=%s steps/s=%.0f runs_started=%d failed_starts=%d throttled=%.3f%% step_p50=%s step_p99=%s first_step_p50=%s first_step_p99=%s next_step_p50=%s next_step_p99=%s req/step=%.2f (GET %.2f PUT %.2f LIST %.3f DEL %.2f) usd/Msteps=%.2f partitions=%d splits=%d held_claims=%.0f client_retries=%d prefixes=[%s]",
		o.scenario, o.model, o.layout, o.scale, o.speed, o.claimNext, r.simTime.Round(time.Second), steps, int64(float64(r.runsStarted)*o.scale), int64(float64(r.failedStarts)*o.scale),
		100*r.throttled, p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		ms(r.first, 50), ms(r.first, 99), ms(r.next, 50), ms(r.next, 99),
		perStep(r.counts.Requests()), perStep(r.counts.Reads), perStep(r.counts.Writes), perStep(r.counts.Lists), perStep(r.counts.Deletes),
		usd, r.partitions, r.splits, r.heldClaims, r.retries, strings.Join(prefixes, " "))
}

// ms is pct rounded to the millisecond, as the reports print it.
func ms(xs []time.Duration, p int) time.Duration { return pct(xs, p).Round(time.Millisecond) }

func pct(xs []time.Duration, p int) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

// sim is one simulation's shared state.
type simulation struct {
	o       options
	clock   *sim.ScaledClock
	store   *sim.Store
	engines []*engine.Engine

	mu      sync.Mutex
	readyAt map[string]time.Time // run → when its current step became ready (sim)
	lat     []time.Duration
	// firstStep is, for each of lat, whether it was a run's first step:
	// from the start, through the claim that leased it, to its complete.
	// A later step of a linear run is ready when the complete before it
	// returned, with its lease in hand under claim_next.
	firstStep []bool
	steps     atomic.Int64
	started   atomic.Int64
	failed    atomic.Int64
	// burstDone counts completed burst runs (single-step): started and
	// failed count only the burst's runs in that scenario.
	burstDone atomic.Int64
	retries   atomic.Int64
	held      []float64
	fanRun    atomic.Value // string: the fanout scenario's run
}

func defaults(o *options) {
	if o.doubleEvery > 0 && o.rampFrom > 0 && o.rampFrom < o.stepsPerSec {
		o.warm = time.Duration(float64(o.doubleEvery) * math.Log2(o.stepsPerSec/o.rampFrom))
	}
	if o.duration == 0 {
		switch o.scenario {
		case "burst":
			o.duration = o.warm + 20*time.Minute
		case "fanout":
			o.duration = 15 * time.Minute
		case "idle":
			o.duration = 10 * time.Minute
		default:
			o.duration = o.warm + time.Hour
		}
	}
	if o.warmup == 0 {
		switch o.scenario {
		case "steady":
			o.warmup = o.warm
		case "burst":
			o.warmup = o.warm // measured from the burst's start
			if o.warmup == 0 {
				o.warmup = -1
			}
		default:
			o.warmup = -1 // the whole run counts
		}
	}
	if o.workers == 0 {
		switch o.scenario {
		case "idle":
			o.workers = o.idleWorkers
		case "fanout":
			o.workers = 1000 // a fan-out is one run: its width, not the scale, sets the work
		default:
			// Enough for the load: 6,000 workers at full size (10,000
			// steps/s at ~250 ms of store latency a step, with room),
			// scaled like the load.
			o.workers = max(8, int(6000/o.scale))
		}
	}
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	defaults(&o)
	model, err := storeModel(o.model)
	if err != nil {
		return result{}, err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := sim.NewScaledClock(t0, o.speed)
	scaled := model.Scaled(o.scale)
	if o.burst > 0 {
		scaled.Burst = o.burst
	}
	bucket, store := sim.New(mem.New(), scaled, clock, o.seed)
	s := &simulation{o: o, clock: clock, store: store, readyAt: map[string]time.Time{}}
	defer s.closeEngines()
	if err := s.startEngines(bucket, model); err != nil {
		return result{}, err
	}
	wfs := scenarioWorkflows(o)
	if err := s.retry(ctx, func() error {
		_, err := s.engines[0].Register(ctx, cairn.RegisterRequest{WorkerID: "admin", Workflows: wfs})
		return err
	}); err != nil {
		return result{}, fmt.Errorf("register: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range o.workers {
		wg.Add(1)
		go func() { defer wg.Done(); s.worker(ctx, s.engines[i%len(s.engines)], fmt.Sprintf("w%05d", i), wfs) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.reaper(ctx) }()
	genDone := make(chan struct{})
	go func() { defer close(genDone); s.generate(ctx) }()

	warm, final := s.observe(ctx, w)
	cancel()
	<-genDone
	wg.Wait()
	if !o.quiet {
		printRefusals(w, store)
	}
	return s.measured(warm, final), nil
}

// storeModel is the store model --model names.
func storeModel(name string) (sim.Model, error) {
	switch name {
	case "s3":
		return sim.S3, nil
	case "gcs":
		return sim.GCS, nil
	default:
		return sim.Model{}, fmt.Errorf("model %q: want s3 or gcs", name)
	}
}

// startEngines starts the simulation's engine instances on bucket, which
// share an in-process bus; closeEngines closes them.
func (s *simulation) startEngines(bucket *blob.Bucket, model sim.Model) error {
	o := s.o
	bus := notifymem.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range o.instances {
		e, err := engine.New(bucket, engine.Config{
			Now: s.clock.Now, Bus: bus, KeyLayout: o.layout, Logger: log,
			// A claim's hold is timed by the wall clock: divided by the
			// speed, it holds as long in simulated time as on the platform
			// (30 s requests, 24 s holds).
			MaxRequestTime:   time.Duration(float64(engine.DefaultMaxRequestTime) / o.speed),
			FallbackInterval: fallbackInterval(o),
			// GCS's one write a second per object, on the wall clock the
			// committer spaces by: speed a wall second.
			ObjectWritesPerSecond: objectRate(o, model) * o.speed,
			ShedAbove:             o.shedAbove,
		})
		if err != nil {
			return err
		}
		s.engines = append(s.engines, e)
	}
	return nil
}

// closeEngines closes the engines, the newest first.
func (s *simulation) closeEngines() {
	for i := len(s.engines) - 1; i >= 0; i-- {
		s.engines[i].Close()
	}
}

// scenarioWorkflows are the workflows the scenario runs, and only those:
// definitions are part of every worker's registration.
func scenarioWorkflows(o options) []cairn.Workflow {
	switch o.scenario {
	case "fanout":
		return []cairn.Workflow{fan("fan", o.fanout)}
	case "burst":
		return []cairn.Workflow{linear("steady", o.steps), linear("single", 1)}
	default:
		return []cairn.Workflow{linear("steady", o.steps), linear("single", 1)}
	}
}

// observe follows the simulation in simulated time until its duration
// passes (or, but for steady, its load drained), printing a report line
// every --report unless quiet, and sampling the claims held each second.
// It returns the snapshots the summary spans: at the warm-up's end (or
// the last report's, when the warm-up outlasted the run) and at the end.
func (s *simulation) observe(ctx context.Context, w io.Writer) (warm, final *snapshot) {
	o := s.o
	start := s.clock.Now()
	if o.warmup < 0 {
		warm = s.snap()
	}
	next := start.Add(o.report)
	end := start.Add(o.duration)
	prev := s.snap()
	if !o.quiet {
		fmt.Fprintf(w, "# %s on %s, %s layout, scale 1/%g, %g× time, %d instances, %d workers, claim_next %v, fallback scans every %s (fleet %d)\n", o.scenario, o.model, o.layout, o.scale, o.speed, o.instances, o.workers, o.claimNext, cmp.Or(fallbackInterval(o), engine.DefaultFallbackInterval), o.fleet)
		fmt.Fprintf(w, "%8s %10s %10s %9s %9s %9s %9s %9s %8s %6s %6s\n", "sim", "steps/s", "req/s", "thr%", "p50", "p99", "p99first", "p99next", "req/step", "parts", "held")
	}
	for {
		now := s.clock.Now()
		if now.After(end) || o.scenario != "steady" && s.drained(now.Sub(start)) {
			break
		}
		if warm == nil && now.Sub(start) >= o.warmup {
			warm = s.snap()
		}
		if now.After(next) {
			cur := s.snap()
			if !o.quiet {
				cur.line(w, prev, o, now.Sub(start))
				if id, ok := s.fanRun.Load().(string); ok {
					s.fanStatus(ctx, w, id)
				}
			}
			prev, next = cur, next.Add(o.report)
		}
		s.sampleHeld()
		s.clock.Sleep(ctx, time.Second)
	}
	final = s.snap()
	if warm == nil {
		warm = prev
	}
	return warm, final
}

// printRefusals prints where the refusals were: the partitions that
// refused most, since each was made (a partition split after the warm-up
// counts from its split).
func printRefusals(w io.Writer, store *sim.Store) {
	ps := store.Partitions()
	sort.Slice(ps, func(i, j int) bool { return ps[i].Refused > ps[j].Refused })
	fmt.Fprintf(w, "# partitions that refused most (of %d): first key, refused / requests\n", len(ps))
	for _, p := range ps[:min(8, len(ps))] {
		fmt.Fprintf(w, "#   %-40q %5.1f%% of %d\n", p.Lo, 100*float64(p.Refused)/float64(max(p.Served+p.Refused, 1)), p.Served+p.Refused)
	}
}

// measured is what the simulation measured from warm to final.
func (s *simulation) measured(warm, final *snapshot) result {
	d := final.sub(warm)
	held := 0.0
	for _, h := range s.held {
		held += h
	}
	return result{
		simTime: final.at.Sub(warm.at), steps: d.steps, runsStarted: s.started.Load(), failedStarts: s.failed.Load(),
		counts: d.counts, lat: d.lat, first: d.first, next: d.next, partitions: final.stats.Partitions, splits: len(final.stats.Splits),
		heldClaims: held / float64(max(len(s.held), 1)), throttled: float64(d.counts.Throttled()) / float64(max(d.counts.Requests(), 1)),
		hottest: final.stats.HottestWrites, byPrefix: d.byPrefix, retries: s.retries.Load(),
	}
}

// fanStatus reports how many of the fan-out's steps are done: from the
// run's progress (one read; GetRun would read every ready step's lease).
func (s *simulation) fanStatus(ctx context.Context, w io.Writer, id string) {
	p, err := s.engines[0].GetRunStatus(ctx, id, 0, 0)
	if err != nil {
		fmt.Fprintf(w, "#   fan-out %s: %v\n", id, err)
		return
	}
	fmt.Fprintf(w, "#   fan-out %s %s: %d of %d steps done\n", id, p.Status, p.StepsDone, p.StepsTotal)
}

// drained: a finite scenario ends when its runs are all done.
func (s *simulation) drained(elapsed time.Duration) bool {
	switch s.o.scenario {
	case "burst":
		target := int64(float64(s.o.burstRuns) / s.o.scale)
		return elapsed > s.o.warm+s.o.burstWindow && s.started.Load()+s.failed.Load() >= target && s.burstDone.Load() >= s.started.Load()
	case "fanout":
		return s.steps.Load() >= int64(s.o.fanout)
	}
	return false
}

type snapshot struct {
	at          time.Time
	steps       int64
	counts      sim.Counts
	byPrefix    map[string]sim.Counts
	lat         []time.Duration
	first, next []time.Duration // lat: a run's first step, the later ones
	nlat        int
	stats       sim.Stats
	s           *simulation
}

// latSince are the step latencies recorded between p and c: all of them,
// and split into runs' first steps and the steps after those.
func (c *snapshot) latSince(p *snapshot) (all, first, next []time.Duration) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	all = append([]time.Duration(nil), c.s.lat[p.nlat:c.nlat]...)
	for i, d := range all {
		if c.s.firstStep[p.nlat+i] {
			first = append(first, d)
		} else {
			next = append(next, d)
		}
	}
	return all, first, next
}

func (s *simulation) snap() *snapshot {
	st := s.store.Stats()
	s.mu.Lock()
	n := len(s.lat)
	s.mu.Unlock()
	return &snapshot{at: s.clock.Now(), steps: s.steps.Load(), counts: st.Total, byPrefix: st.ByPrefix, nlat: n, stats: st, s: s}
}

// sub is what happened between an earlier snapshot and this one.
func (c *snapshot) sub(p *snapshot) *snapshot {
	d := &snapshot{at: c.at, steps: c.steps - p.steps, counts: c.counts.Sub(p.counts), byPrefix: map[string]sim.Counts{}}
	d.lat, d.first, d.next = c.latSince(p)
	for k, v := range c.byPrefix {
		d.byPrefix[k] = v.Sub(p.byPrefix[k])
	}
	return d
}

func (c *snapshot) line(w io.Writer, p *snapshot, o options, elapsed time.Duration) {
	secs := c.at.Sub(p.at).Seconds()
	d := c.counts.Sub(p.counts)
	lat, first, next := c.latSince(p)
	fmt.Fprintf(w, "%8s %10.0f %10.0f %9.3f %9s %9s %9s %9s %8.2f %6d %6.0f\n", elapsed.Round(time.Second),
		float64(c.steps-p.steps)*o.scale/secs, float64(d.Requests())*o.scale/secs,
		100*float64(d.Throttled())/float64(max(d.Requests(), 1)), ms(lat, 50), ms(lat, 99), ms(first, 99), ms(next, 99),
		float64(d.Requests())/float64(max(c.steps-p.steps, 1)), c.stats.Partitions, c.s.lastHeld())
}

func (s *simulation) lastHeld() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) == 0 {
		return 0
	}
	return s.held[len(s.held)-1]
}

func (s *simulation) sampleHeld() {
	n := 0
	for _, e := range s.engines {
		n += e.HeldClaims()
	}
	s.mu.Lock()
	s.held = append(s.held, float64(n))
	s.mu.Unlock()
}

// retry calls f until it succeeds, or fails with something a client
// would not send again, backing off as the SDK does on 503s.
func (s *simulation) retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := 0; attempt < 12; attempt++ {
		if err = f(); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
		s.retries.Add(1)
		back := min(50*time.Millisecond<<attempt, 5*time.Second)
		s.clock.Sleep(ctx, back/2+time.Duration(rand.Int64N(int64(back/2)+1)))
	}
	return err
}

func retryable(err error) bool {
	var u *engine.UnavailableError
	return blob.IsRetryable(err) || errors.As(err, &u)
}

func (s *simulation) generate(ctx context.Context) {
	o := s.o
	var total int64
	var rate float64 // runs per simulated second, scaled
	switch o.scenario {
	case "steady":
		s.steady(ctx, o, true)
		return
	case "burst":
		go s.steady(ctx, o, false) // ramps over o.warm, then goes on under the burst
		if err := s.clock.Sleep(ctx, o.warm); err != nil {
			return
		}
		total = int64(float64(o.burstRuns) / o.scale)
		rate = float64(total) / o.burstWindow.Seconds()
	case "fanout":
		s.start(ctx, "fan", true)
		return
	default:
		return
	}
	wf := "steady"
	if o.scenario == "burst" {
		wf = "single"
	}
	s.pace(ctx, wf, rate, total, 0, true)
}

// steady starts the steady load's runs, ramping up over o.warm: linearly,
// or exponentially with --double-every.
func (s *simulation) steady(ctx context.Context, o options, count bool) {
	rate := o.stepsPerSec / float64(o.steps) / o.scale
	if o.doubleEvery > 0 && o.rampFrom > 0 && o.rampFrom < o.stepsPerSec {
		from, d := o.rampFrom/float64(o.steps)/o.scale, o.doubleEvery.Seconds()
		s.paceBy(ctx, "steady", func(el float64) float64 { return min(rate, from*math.Exp2(el/d)) }, 1<<62, count)
		return
	}
	s.pace(ctx, "steady", rate, 1<<62, o.warm, count)
}

// pace starts total runs of wf at rate per simulated second, reached
// linearly over ramp (0: at once).
func (s *simulation) pace(ctx context.Context, wf string, rate float64, total int64, ramp time.Duration, count bool) {
	r := ramp.Seconds()
	s.paceBy(ctx, wf, func(el float64) float64 {
		if el < r {
			return rate * el / r
		}
		return rate
	}, total, count)
}

// paceBy starts total runs of wf at rate(t) per simulated second, t the
// simulated seconds since it began.
func (s *simulation) paceBy(ctx context.Context, wf string, rate func(el float64) float64, total int64, count bool) {
	sem := make(chan struct{}, 512)
	begin := s.clock.Now()
	var issued int64
	var want, last float64
	for issued < total && ctx.Err() == nil {
		el := s.clock.Now().Sub(begin).Seconds()
		if el > last { // the trapezoid of the rate over the elapsed slice
			want += (rate(last) + rate(el)) / 2 * (el - last)
			last = el
		}
		due := min(total, int64(want))
		for ; issued < due; issued++ {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() { defer func() { <-sem }(); s.start(ctx, wf, count) }()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *simulation) start(ctx context.Context, wf string, count bool) {
	e := s.engines[rand.IntN(len(s.engines))]
	var id string
	err := s.retry(ctx, func() error {
		res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: wf, IdempotencyKey: ""})
		if err == nil {
			id = res.Run.ID
		}
		return err
	})
	if err != nil {
		if ctx.Err() == nil && count {
			s.failed.Add(1)
		}
		return
	}
	if count {
		s.started.Add(1)
	}
	if wf == "fan" {
		s.fanRun.Store(id)
	}
	s.mu.Lock()
	if _, ok := s.readyAt[id]; !ok {
		s.readyAt[id] = s.clock.Now()
	}
	s.mu.Unlock()
}

func (s *simulation) worker(ctx context.Context, e *engine.Engine, id string, wfs []cairn.Workflow) {
	for ctx.Err() == nil { // a worker keeps trying to register, as the SDK does
		if s.retry(ctx, func() error {
			_, err := e.Register(ctx, cairn.RegisterRequest{WorkerID: id, Workflows: wfs})
			return err
		}) == nil {
			break
		}
	}
	var next []cairn.Lease
	fails := 0
	for ctx.Err() == nil {
		if len(next) == 0 {
			ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: id, Max: 1, WaitMs: 20000})
			if err != nil { // back off as the SDK does: 100 ms doubling to 5 s, jittered
				back := min(100*time.Millisecond<<min(fails, 6), 5*time.Second)
				fails++
				s.clock.Sleep(ctx, back/2+time.Duration(rand.Int64N(int64(back/2)+1)))
				continue
			}
			fails = 0
			next = ls
			continue
		}
		l := next[0]
		next = next[1:]
		var ended *cairn.Ended
		req := cairn.CompleteRequest{Output: json.RawMessage(`1`)}
		if s.o.claimNext {
			req.ClaimNext = &cairn.ClaimNext{Max: 1}
		}
		err := s.retry(ctx, func() error {
			var err error
			ended, err = e.Complete(ctx, l.ID, req)
			return err
		})
		if err != nil {
			continue
		}
		now := s.clock.Now()
		s.steps.Add(1)
		if l.Workflow == "single" {
			s.burstDone.Add(1)
		}
		s.mu.Lock()
		if t, ok := s.readyAt[l.Run]; ok {
			s.lat = append(s.lat, now.Sub(t))
			s.firstStep = append(s.firstStep, l.Step == "s0" || l.Workflow == "fan")
		}
		if ended.RunStatus.Terminal() || l.Workflow == "fan" {
			if l.Workflow != "fan" {
				delete(s.readyAt, l.Run)
			}
		} else {
			s.readyAt[l.Run] = now
		}
		s.mu.Unlock()
		next = append(next, ended.Leases...)
	}
}

func (s *simulation) reaper(ctx context.Context) {
	for ctx.Err() == nil {
		if err := s.clock.Sleep(ctx, s.o.reapEvery); err != nil {
			return
		}
		// The reaper is one per deployment and its LISTs (every shard of
		// the timer index, each pass) do not shrink with the load: charged
		// at 1/scale, they cost the scaled store what they cost the real one.
		s.engines[0].Reap(sim.WithListWeight(ctx, 1/s.o.scale))
	}
}

func linear(name string, n int) cairn.Workflow {
	w := cairn.Workflow{Name: name, Version: "1"}
	for i := range n {
		st := cairn.Step{ID: fmt.Sprintf("s%d", i)}
		if i > 0 {
			st.After = []string{w.Steps[i-1].ID}
		}
		w.Steps = append(w.Steps, st)
	}
	return w
}

func fan(name string, width int) cairn.Workflow {
	w := cairn.Workflow{Name: name, Version: "1"}
	for i := range max(width, 1) {
		w.Steps = append(w.Steps, cairn.Step{ID: fmt.Sprintf("f%05d", i)})
	}
	return w
}
