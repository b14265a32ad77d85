// Package chaos is cairn's reliability suite: it runs several `cairn
// serve` instances, a reaper and SDK worker processes on one store (the
// file store or MinIO, optionally behind injected faults), with NATS or
// no bus, drives a mixed workload through them while killing (-9),
// pausing (SIGSTOP/SIGCONT) and restarting processes on a seeded random
// schedule, then lets everything drain and checks the outcome against
// what the worker bodies logged: every run ended, no at_most_once body ran
// twice, every recorded output came from a logged execution of its
// attempt, journals agree with attempts, every stored object parses, no
// temporary file is left, and the worker-protocol history is
// linearizable against the lease model (see history.go, lease_model.go).
//
// The seed is printed first; the same seed replays the same schedule of
// kills, pauses, workload choices and fault draws (timing still varies).
// See docs/RELIABILITY.md.
package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/openapi/client"
	"github.com/cairn-dev/cairn/sdk"
)

// Faults are the per-operation fault rates injected into the store of
// every cairn process (0: none).
type Faults struct {
	Error, Conflict, Throttle, Lost float64
	// Latency is the median of an added store latency; Latency99 its p99.
	Latency, Latency99 time.Duration
}

func (f Faults) any() bool {
	return f.Error > 0 || f.Conflict > 0 || f.Throttle > 0 || f.Lost > 0 || f.Latency > 0
}

// Config is one chaos round.
type Config struct {
	Seed uint64
	// Duration is how long processes are killed and paused under load.
	Duration time.Duration
	// DrainTimeout bounds the wait for every run to end afterwards.
	DrainTimeout time.Duration
	// Store is the inner bucket URL all processes share; StoreEnv is what
	// they need to open it (credentials).
	Store    string
	StoreEnv []string
	// OpenStore opens the store in this process for the checks [blob.OpenBucket(Store)].
	OpenStore func(ctx context.Context) (*blob.Bucket, error)
	// FileRoot is the store's directory when it is a file store ("" otherwise):
	// the temp-file check walks it.
	FileRoot string
	// StoreProc, when set, is the store's server process (MinIO), which
	// the round starts first and then kills, pauses and restarts like the
	// others; the driver probes the API while it is down.
	StoreProc *StoreProc
	// NATS is the bus URL; empty runs with no bus (fallback polling only).
	NATS    string
	APIs    int
	Workers int
	Faults  Faults
	// ChaosEvery is the mean period between chaos actions.
	ChaosEvery time.Duration
	// StoreEvery is the mean period between store process outages (a
	// kill -9 or a pause of up to 3 s) [8s].
	StoreEvery time.Duration
	// StartEvery is the mean period between run starts.
	StartEvery time.Duration
	// StartGiveUp bounds the retries of a start, an event or a cancel
	// during the chaos [3m]; one that gives up is looked up again after
	// it (resolveLate).
	StartGiveUp time.Duration
	// Dir holds logs, the execution log and the call history.
	Dir string
	// CairnBin is a cairn binary built with -tags cairn_chaos; WorkerBin
	// the chaosworker binary.
	CairnBin, WorkerBin string
	// TSWorkers is how many TypeScript workers (chaos/tsworker, the
	// TypeScript SDK) join the Go workers, run as NodeBin TSWorkerScript.
	TSWorkers      int
	NodeBin        string
	TSWorkerScript string
	// StrictLiveness judges the ready-to-leased waits counted while a
	// worker had free slots, not only while one was idle (liveness.go).
	StrictLiveness bool
	// Addrs are the API instances' listen addresses (127.0.0.1:port).
	Addrs []string
	Log   io.Writer
}

// Report is what a round did and found.
type Report struct {
	Seed     uint64
	Store    string
	Bus      string
	Duration time.Duration
	// Unrecorded counts executions of attempts the run record does not
	// list because the run ended (was cancelled) while they ran: the
	// record keeps an attempt once it ends, and the end of the run cut it.
	Unrecorded int
	// Kills, Pauses count chaos actions by process kind.
	Kills, Pauses map[Kind]int
	// Faults counts the faults injected into the stores.
	Faults FaultCounts
	// Runs counts runs started, by final status.
	Runs       int
	ByStatus   map[cairn.RunStatus]int
	ByWorkflow map[string]int
	IdemStarts int
	// LateFound counts starts that gave up during the chaos and whose run
	// the driver found afterwards by the idempotency key (the first start
	// had created it); LateCreated those whose run the lookup created (no
	// start had got through); LateSends events and cancels sent after the
	// chaos because every try during it failed.
	LateFound, LateCreated, LateSends int
	// EventsSent and CancelsSent count the events and cancels accepted;
	// Executions the logged executions of step bodies.
	EventsSent  int
	CancelsSent int
	Executions  int
	// TSExecutions counts the executions by TypeScript workers.
	TSExecutions int
	// Duplicates counts extra executions of at_least_once steps (the same
	// step of the same run executed again after a kill or a lost lease).
	Duplicates int
	// DoubleAMO counts at_most_once steps whose body ran more than once.
	DoubleAMO int
	// Stuck counts runs not ended when the drain timed out.
	Stuck int
	// Corrupt counts stored objects that do not parse.
	Corrupt int
	// Objects is how many stored objects were checked.
	Objects int
	// TempLeft counts ~tmp- files older than the sweep age left in a file
	// store after the drain.
	TempLeft int
	// Calls counts recorded worker-protocol calls; Linearizable is the
	// history checker's verdict.
	Calls int
	// Unanswered counts calls in flight when their worker was killed
	// (invoked, never answered: checked as possibly applied).
	Unanswered   int
	LeaseOps     int
	Linearizable bool
	Drain        time.Duration
	// Outage is how the API answered while the store process was down;
	// OutageLogs counts the API instances' log lines about a failing or
	// unreachable store (claims summarise an outage in one line each way;
	// other requests log one line each).
	Outage     OutageCounts
	OutageLogs map[string]int
	// StoreHangs counts store starts taken for hung — no CPU used for
	// 20 s, or not serving after 5 minutes — or that exited (each was sent
	// SIGABRT for a goroutine dump, then started again); StoreStartMax is
	// the longest a start took until it served.
	StoreHangs    int
	StoreStartMax time.Duration
	// Live is the liveness measured: ready-to-leased waits and the
	// bounds of those and of the drain (liveness.go).
	Live Liveness
	// Failures lists each failed check.
	Failures []string
}

// FaultCounts are injected faults by kind, summed over processes.
type FaultCounts struct {
	Error    int64 `json:"error"`
	Conflict int64 `json:"conflict"`
	Throttle int64 `json:"throttle"`
	Lost     int64 `json:"lost"`
}

func (r *Report) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// String summarises the report on a few lines.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos seed=%d store=%s bus=%s duration=%v\n", r.Seed, r.Store, r.Bus, r.Duration)
	fmt.Fprintf(&b, "  kills: api=%d reaper=%d worker=%d store=%d; pauses: api=%d reaper=%d worker=%d store=%d\n",
		r.Kills[KindAPI], r.Kills[KindReaper], r.Kills[KindWorker], r.Kills[KindStore], r.Pauses[KindAPI], r.Pauses[KindReaper], r.Pauses[KindWorker], r.Pauses[KindStore])
	if o := r.Outage; o.Probes > 0 || r.Kills[KindStore] > 0 {
		fmt.Fprintf(&b, "  store down: probes=%d 503+Retry-After=%d other 5xx=%d answered=%d; log lines %v; starts that hung or exited=%d, slowest start=%v\n", o.Probes, o.Unavailable, o.Other, o.OK, r.OutageLogs, r.StoreHangs, r.StoreStartMax.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "  faults injected: 5xx=%d conflict=%d throttle=%d lost=%d\n", r.Faults.Error, r.Faults.Conflict, r.Faults.Throttle, r.Faults.Lost)
	st := make([]string, 0, len(r.ByStatus))
	for s, n := range r.ByStatus {
		st = append(st, fmt.Sprintf("%s=%d", s, n))
	}
	sort.Strings(st)
	fmt.Fprintf(&b, "  runs=%d (%s) durable functions=%d triggered by a published event=%d; idempotent double starts=%d events=%d cancels=%d\n", r.Runs, strings.Join(st, " "), r.ByWorkflow[WfFunction], r.ByWorkflow[WfTriggered], r.IdemStarts, r.EventsSent, r.CancelsSent)
	if r.LateFound+r.LateCreated+r.LateSends > 0 {
		fmt.Fprintf(&b, "  gave up during the chaos, resolved after it: starts found by key=%d created by the lookup=%d events/cancels=%d\n", r.LateFound, r.LateCreated, r.LateSends)
	}
	fmt.Fprintf(&b, "  executions=%d at_least_once duplicates=%d double at_most_once=%d stuck=%d corrupt=%d/%d objects temp_left=%d\n",
		r.Executions, r.Duplicates, r.DoubleAMO, r.Stuck, r.Corrupt, r.Objects, r.TempLeft)
	fmt.Fprintf(&b, "  executions of attempts cut by the run's end (not in the record)=%d; by typescript workers=%d\n", r.Unrecorded, r.TSExecutions)
	fmt.Fprintf(&b, "  worker calls=%d (unanswered=%d) lease operations=%d linearizable=%v drain=%v\n", r.Calls, r.Unanswered, r.LeaseOps, r.Linearizable, r.Drain.Round(time.Millisecond))
	b.WriteString(r.Live.String())
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "  FAILED (seed %d): %s\n", r.Seed, f)
	}
	return b.String()
}

// round is one running chaos round.
type round struct {
	cfg    Config
	rep    *Report
	procs  []*proc
	apis   []*proc // the API instances, in Addrs order
	store  *proc   // the store process, when the round runs one
	execs  string
	hist   string
	logmu  sync.Mutex
	bases  []string
	client []*sdk.Client

	// tl is the process table over time; workerAPI names each worker's
	// API instance (liveness.go).
	tl        *timeline
	workerAPI map[string]string
	// journals are the ended runs' journals, read by checkRuns.
	journals []runJournal
	// chaosStart and drainStart begin the two phases; driverDone is when
	// the drain's restarts and late sends were done.
	chaosStart, drainStart, driverDone time.Time

	mu      sync.Mutex
	runs    map[string]string // run id → workflow
	eventOf map[string]string // triggered run id → the id of the event that started it
	late    []job             // jobs that gave up during the chaos (resolveLate)
	pending sync.WaitGroup    // event senders, cancels
	events  atomic.Int64
	cancels atomic.Int64
	idem    atomic.Int64
}

func (r *round) logf(format string, args ...any) {
	if r.cfg.Log == nil {
		return
	}
	r.logmu.Lock()
	fmt.Fprintf(r.cfg.Log, format+"\n", args...)
	r.logmu.Unlock()
}

// storeURL is the bucket URL of a cairn process's gen-th start.
func (r *round) storeURL(i, gen int) string {
	if !r.cfg.Faults.any() {
		return r.cfg.Store
	}
	f := r.cfg.Faults
	q := url.Values{}
	q.Set("store", r.cfg.Store)
	q.Set("seed", strconv.FormatUint(r.cfg.Seed*1_000_003+uint64(i)*1009+uint64(gen), 10))
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	q.Set("error", ff(f.Error))
	q.Set("conflict", ff(f.Conflict))
	q.Set("throttle", ff(f.Throttle))
	q.Set("lost", ff(f.Lost))
	if f.Latency > 0 {
		q.Set("latency", f.Latency.String())
		q.Set("latency99", f.Latency99.String())
	}
	q.Set("stats", filepath.Join(r.cfg.Dir, "faults", fmt.Sprintf("p%d", i)))
	return "faults://?" + q.Encode()
}

// Run runs one chaos round and reports it. A non-empty Report.Failures
// means a check failed; err means the round could not run.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r := newRound(cfg.withDefaults())
	cfg, rep := r.cfg, r.rep
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "faults"), 0o755); err != nil {
		return nil, err
	}
	r.logf("chaos: seed=%d store=%s bus=%s apis=%d workers=%d (go) + %d (typescript) duration=%v dir=%s", cfg.Seed, rep.Store, rep.Bus, cfg.APIs, cfg.Workers, cfg.TSWorkers, cfg.Duration, cfg.Dir)
	if cfg.StoreProc != nil {
		defer r.stopKinds(KindStore) // last: the checks read the store
		if err := r.startStore(ctx); err != nil {
			return nil, err
		}
	}
	defer r.stopAll()
	if err := r.startAll(ctx); err != nil {
		return nil, err
	}
	if r.store != nil {
		r.procs = append(r.procs, r.store)
	}

	r.chaosPhase(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := r.drainPhase(ctx); err != nil {
		return nil, err
	}
	r.checkPhase(ctx)
	return rep, nil
}

// withDefaults is cfg with its unset periods and timeouts set to their
// defaults.
func (cfg Config) withDefaults() Config {
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 2 * time.Minute
	}
	if cfg.ChaosEvery == 0 {
		cfg.ChaosEvery = 500 * time.Millisecond
	}
	if cfg.StoreEvery == 0 {
		cfg.StoreEvery = 8 * time.Second
	}
	if cfg.StartEvery == 0 {
		cfg.StartEvery = 40 * time.Millisecond
	}
	if cfg.StartGiveUp == 0 {
		cfg.StartGiveUp = 3 * time.Minute
	}
	return cfg
}

// newRound is a round of cfg, with its empty report.
func newRound(cfg Config) *round {
	bus := "none"
	if cfg.NATS != "" {
		bus = "nats"
	}
	rep := &Report{Seed: cfg.Seed, Store: strings.SplitN(cfg.Store, ":", 2)[0], Bus: bus, Duration: cfg.Duration,
		Kills: map[Kind]int{}, Pauses: map[Kind]int{}, ByStatus: map[cairn.RunStatus]int{}, ByWorkflow: map[string]int{}}
	return &round{cfg: cfg, rep: rep, execs: filepath.Join(cfg.Dir, "executions.jsonl"), hist: filepath.Join(cfg.Dir, "history.jsonl"),
		runs: map[string]string{}, eventOf: map[string]string{}, tl: &timeline{}, workerAPI: map[string]string{}}
}

// chaosPhase runs the load and the faults together for the round's
// duration (or until ctx is cancelled).
func (r *round) chaosPhase(ctx context.Context) {
	r.chaosStart = time.Now()
	chaosCtx, stopChaos := context.WithTimeout(ctx, r.cfg.Duration)
	defer stopChaos()
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); r.storeChaos(chaosCtx) }()
	go func() { defer wg.Done(); r.workload(chaosCtx) }()
	go func() { defer wg.Done(); r.chaos(chaosCtx) }()
	go func() { defer wg.Done(); r.probeOutages(chaosCtx) }()
	wg.Wait()
}

// drainPhase brings everything back up, with no more chaos, and waits for
// every run to end.
func (r *round) drainPhase(ctx context.Context) error {
	rep := r.rep
	t0 := time.Now()
	r.drainStart = t0
	if r.store != nil {
		r.reviveStore(ctx)
	}
	for _, p := range r.procs {
		if err := p.ensure(); err != nil {
			return err
		}
	}
	r.pending.Wait()
	r.resolveLate(ctx)
	r.driverDone = time.Now()
	r.drain(ctx)
	rep.Drain = time.Since(t0)
	rep.EventsSent, rep.CancelsSent, rep.IdemStarts = int(r.events.Load()), int(r.cancels.Load()), int(r.idem.Load())
	r.logf("chaos: drained in %v", rep.Drain.Round(time.Millisecond))
	return nil
}

// checkPhase lets the reapers and sweeps pass once more, then stops
// everything and checks what is left.
func (r *round) checkPhase(ctx context.Context) {
	if r.cfg.FileRoot != "" {
		time.Sleep(2*tempMaxAge + time.Second)
	}
	// Stop the workers and the reaper first: nothing runs any more while
	// the execution log is compared with the records. The API instances
	// answer the checks.
	r.stopKinds(KindWorker, KindReaper)
	// The checks get their own time: a long round's drain may have used
	// the caller's.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Minute)
	defer ccancel()
	r.checkRuns(cctx)
	r.stopAll()
	r.collectFaults()
	r.checkStore(cctx)
	r.checkHistory()
	r.checkLiveness()
	r.checkOutage()
	r.rep.OutageLogs = r.countOutageLogs()
	r.checkOutageLogs()
}

// tempMaxAge is the file store's temp-file sweep age in chaos rounds.
const tempMaxAge = 3 * time.Second

// The cairn processes' configuration, which the liveness bounds derive
// from (liveParams).
const (
	leaseTTL = 2 * time.Second
	// noBusFallback is CAIRN_FALLBACK_INTERVAL in a round with no bus; a
	// round with a bus leaves the engine's default, busFallback.
	noBusFallback = 500 * time.Millisecond
	busFallback   = 10 * time.Second // engine.DefaultFallbackInterval
	reaperEvery   = 250 * time.Millisecond
	// announceAfter and activeCheck are the engine's defaults of
	// AnnounceAfter and ActiveCheckInterval (= the lease TTL).
	announceAfter = 5 * time.Second
	activeCheck   = leaseTTL
	// liveSlack is L1's allowance for a loaded machine; workloadTime the
	// slowest chaos run's own time (the slow workflow's 1.5 s body and
	// one more step; the flaky workflow's two failures and backoffs are
	// less).
	liveSlack    = 5 * time.Second
	workloadTime = 2 * time.Second
)

// liveParams are the round's liveness parameters.
func (r *round) liveParams() liveParams {
	p := liveParams{LeaseTTL: leaseTTL, Reaper: reaperEvery, Fallback: noBusFallback,
		AnnounceAfter: announceAfter, ActiveCheck: activeCheck, Slack: liveSlack, Workload: workloadTime}
	if r.cfg.NATS != "" {
		p.Bus, p.Fallback = true, busFallback
	}
	return p
}

func (r *round) startAll(ctx context.Context) error {
	cfg := r.cfg
	common := []string{"CAIRN_DEV=true", "CAIRN_LEASE_TTL=" + leaseTTL.String(), "CAIRN_LOG_LEVEL=warn", "CAIRN_MAX_REQUEST_TIME=10s"}
	common = append(common, cfg.StoreEnv...)
	if cfg.NATS != "" {
		common = append(common, "CAIRN_NOTIFY="+cfg.NATS)
	} else {
		common = append(common, "CAIRN_FALLBACK_INTERVAL="+noBusFallback.String())
	}
	idx := 0
	cairnProc := func(name string, kind Kind, args ...string) *proc {
		i := idx
		idx++
		return &proc{name: name, kind: kind, bin: cfg.CairnBin, args: args, dir: cfg.Dir, env: func(gen int) []string {
			return append(append([]string(nil), common...), "CAIRN_BLOB="+r.storeURL(i, gen))
		}}
	}
	for i, addr := range cfg.Addrs {
		api := cairnProc(fmt.Sprintf("api%d", i), KindAPI, "serve", "--addr", addr)
		r.procs = append(r.procs, api)
		r.apis = append(r.apis, api)
		base := "http://" + addr
		r.bases = append(r.bases, base)
		c, err := sdk.NewClient(base, sdk.WithHTTPClient(&http.Client{Timeout: 15 * time.Second}))
		if err != nil {
			return err
		}
		r.client = append(r.client, c)
	}
	r.procs = append(r.procs, cairnProc("reaper", KindReaper, "reaper", "--every", reaperEvery.String()))
	worker := func(name string, api int, bin string, args ...string) *proc {
		base := r.bases[api]
		r.workerAPI[name] = r.apis[api].name
		return &proc{name: name, kind: KindWorker, bin: bin, args: args, dir: cfg.Dir, env: func(gen int) []string {
			return []string{envServer + "=" + base, envName + "=" + fmt.Sprintf("%s-g%d", name, gen), envExecLog + "=" + r.execs, envHistory + "=" + r.hist}
		}}
	}
	for i := range cfg.Workers {
		r.procs = append(r.procs, worker(fmt.Sprintf("worker%d", i), i%len(r.bases), cfg.WorkerBin))
	}
	// TypeScript workers: the same workflows, bodies and logs through the
	// TypeScript SDK, side by side with the Go workers (the definitions
	// are the same bytes, so either serves any step).
	for i := range cfg.TSWorkers {
		r.procs = append(r.procs, worker(fmt.Sprintf("tsworker%d", i), (cfg.Workers+i)%len(r.bases), cfg.NodeBin, cfg.TSWorkerScript))
	}
	for _, p := range r.procs {
		p.tl = r.tl
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, b := range r.bases {
		if err := waitHealthy(ctx, b); err != nil {
			return err
		}
	}
	// Wait until the workflows are registered (a worker has served).
	deadline := time.Now().Add(60 * time.Second)
	for {
		wfs, err := r.client[0].Workflows(ctx)
		if err == nil && len(wfs) >= len(Workflows) {
			return nil
		}
		if time.Now().After(deadline) {
			// Go on: a workflow a worker failed to register shows up as
			// runs that never start.
			r.logf("chaos: %d of %d workflows listed after a minute (%v); starting anyway", len(wfs), len(Workflows), err)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitHealthy(ctx context.Context, base string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res, err := http.Get(base + "/v1/api/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not become healthy", base)
}

func (r *round) stopAll() { r.stopKinds(KindAPI, KindReaper, KindWorker) }

func (r *round) stopKinds(kinds ...Kind) {
	var wg sync.WaitGroup
	for _, p := range r.procs {
		if !slices.Contains(kinds, p.kind) {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(10 * time.Second) }()
	}
	wg.Wait()
}

// chaos kills, pauses and restarts processes on the seeded schedule.
func (r *round) chaos(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 1))
	for {
		wait := time.Duration(rng.Int64N(int64(2 * r.cfg.ChaosEvery)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		p := r.procs[rng.IntN(len(r.procs))]
		if p.kind == KindStore {
			continue // the store has its own, slower schedule (storeChaos)
		}
		x := rng.Float64()
		switch {
		case !p.alive():
			if err := p.ensure(); err != nil {
				r.logf("chaos: restart %s: %v", p.name, err)
			}
		case p.isPaused():
			p.resume()
		case x < 0.6:
			p.kill()
			r.count(r.rep.Kills, p.kind)
			// Most killed processes come back soon; some stay down until a
			// later action picks them.
			if rng.Float64() < 0.7 {
				d := time.Duration(rng.Int64N(int64(time.Second)))
				time.AfterFunc(d, func() {
					if ctx.Err() == nil {
						p.ensure()
					}
				})
			}
		default:
			if p.pause() {
				r.count(r.rep.Pauses, p.kind)
				d := time.Duration(rng.Int64N(int64(3 * time.Second)))
				time.AfterFunc(d, p.resume)
			}
		}
	}
}

// workload starts runs on the seeded schedule until ctx ends.
func (r *round) workload(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 2))
	n := 0
	for ctx.Err() == nil {
		wait := time.Duration(rng.Int64N(int64(2 * r.cfg.StartEvery)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		n++
		wf := Workflows[rng.IntN(len(Workflows))]
		j := job{wf: wf, in: Input{WorkMs: 30}}
		if wf == WfSlow {
			j.in.SlowMs = 1500
		}
		j.c = r.client[rng.IntN(len(r.client))]
		// Every start carries an idempotency key, so a start whose answer
		// was lost is retried into the same run, never an unknown second.
		j.key = fmt.Sprintf("k-%d-%d", r.cfg.Seed, n)
		j.twice = rng.Float64() < 0.15
		evDelay := time.Duration(rng.Int64N(int64(time.Second)))
		cancel := wf == WfSlow && rng.Float64() < 0.5
		cancelDelay := time.Duration(rng.Int64N(int64(2 * time.Second)))
		j.other = r.client[rng.IntN(len(r.client))]
		switch {
		case wf == WfWait:
			j.event, j.delay = true, evDelay
		case cancel:
			j.cancel, j.delay = true, cancelDelay
		}
		r.pending.Add(1)
		go func() { defer r.pending.Done(); r.drive(j) }()
	}
}

// job is one run the workload drives: its start (twice, on two instances,
// when twice is set), then, after delay, its event or its cancel.
type job struct {
	wf            string
	in            Input
	key           string
	c, other      *sdk.Client
	twice         bool
	event, cancel bool
	delay         time.Duration
	// id is the run's, once a start answered (set on a job whose event or
	// cancel gave up).
	id string
}

// drive starts a job's run and sends what follows the start. A start
// whose retries give up is not counted failed: its run may well exist
// (the answer was lost, or an instance created it and then timed out),
// so the job waits in r.late until the drain, when every process is back,
// looks the run up by its idempotency key (resolveLate) and drives it on.
// Likewise an event or a cancel the instances never accepted.
func (r *round) drive(j job) {
	id, err := r.start(j.c, j.wf, j.in, j.key)
	if err != nil {
		r.logf("chaos: start %s (key %s): %v; looking it up by its key after the chaos", j.wf, j.key, err)
		r.addLate(j)
		return
	}
	if j.twice {
		// The same start again, on another instance: the same run.
		r.idem.Add(1)
		id2, err := r.start(j.other, j.wf, j.in, j.key)
		if err == nil && id2 != id {
			r.mu.Lock()
			r.rep.fail("idempotent start %q gave two runs: %s and %s", j.key, id, id2)
			r.mu.Unlock()
		}
	}
	r.follow(j, id, false)
}

// follow sends a started run's event or cancel after the job's delay; a
// send that gives up waits for resolveLate, unless this is already the
// late pass.
func (r *round) follow(j job, id string, late bool) {
	if !j.event && !j.cancel {
		return
	}
	time.Sleep(j.delay)
	var ok bool
	if j.event {
		ok = r.sendEvent(j.other, id)
	} else {
		ok = r.cancel(j.other, id)
	}
	if !ok && !late {
		j.id = id
		r.addLate(j)
	}
}

func (r *round) addLate(j job) {
	r.mu.Lock()
	r.late = append(r.late, j)
	r.mu.Unlock()
}

// resolveLate drives on the jobs that gave up during the chaos, now that
// every process is back: a job whose start gave up is started again with
// its idempotency key — which answers with the run the first start
// created, if it did (Existed), or creates it now — and then gets its
// event or cancel; a job whose event or cancel gave up sends it again.
// Without this, a start that gave up while its run was created left a run
// no start had answered with, and a wait run whose event was never sent
// sat waiting past the drain ("stuck" runs that were the driver's).
func (r *round) resolveLate(ctx context.Context) {
	r.mu.Lock()
	late := r.late
	r.late = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, j := range late {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if j.id == "" {
				id, existed, err := r.startRun(ctx, j.c, j.wf, j.in, j.key, r.cfg.DrainTimeout)
				if err != nil {
					r.mu.Lock()
					r.rep.fail("start %s (key %s) gave up during the chaos and its run was not found by its key after it: %v", j.wf, j.key, err)
					r.mu.Unlock()
					return
				}
				r.mu.Lock()
				if existed {
					r.rep.LateFound++
				} else {
					r.rep.LateCreated++
				}
				r.mu.Unlock()
				j.id = id
			} else {
				r.mu.Lock()
				r.rep.LateSends++
				r.mu.Unlock()
			}
			j.delay = 0
			r.follow(j, j.id, true)
		}()
	}
	wg.Wait()
}

// start starts a run, retrying on every instance in turn until one
// answers or StartGiveUp passes: with the idempotency key, a start whose
// answer was lost is retried into the same run.
func (r *round) start(c *sdk.Client, wf string, in Input, key string) (string, error) {
	id, _, err := r.startRun(context.Background(), c, wf, in, key, r.cfg.StartGiveUp)
	return id, err
}

func (r *round) startRun(ctx context.Context, c *sdk.Client, wf string, in Input, key string, giveUp time.Duration) (id string, existed bool, err error) {
	deadline := time.Now().Add(giveUp)
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		if i > 0 {
			c = r.client[i%len(r.client)]
		}
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		id, existed, err = begin(cctx, c, wf, in, key)
		cancel()
		if err == nil {
			r.mu.Lock()
			r.runs[id] = wf
			if wf == WfTriggered {
				if prev, ok := r.eventOf[id]; ok && prev != key {
					r.rep.fail("events %s and %s answered the same run %s", prev, key, id)
				}
				r.eventOf[id] = key
			}
			r.mu.Unlock()
			return id, existed, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err == nil {
		err = ctx.Err()
	}
	return "", false, err
}

// begin starts a job's run once: a start with its idempotency key or, for
// the triggered workflow, a publish of its event with the key as the
// event's id (a retried publish answers the run the first one started).
func begin(ctx context.Context, c *sdk.Client, wf string, in Input, key string) (string, bool, error) {
	if wf != WfTriggered {
		run, err := c.Start(ctx, wf, sdk.StartOptions{Input: in, IdempotencyKey: key})
		if err != nil {
			return "", false, err
		}
		return run.ID, run.Existed, nil
	}
	res, err := c.Publish(ctx, TriggerEvent, in, sdk.PublishOptions{ID: key})
	if err != nil {
		return "", false, err
	}
	for _, t := range res.Runs {
		if t.Workflow == WfTriggered {
			return t.Run, t.Existed, nil
		}
	}
	return "", false, fmt.Errorf("the publish of event %s answered no run of %s: %+v", key, WfTriggered, res.Runs)
}

// sendEvent sends a wait run its event until an instance accepts it (or
// the run has ended), for up to StartGiveUp.
func (r *round) sendEvent(c *sdk.Client, run string) bool {
	ok := r.untilAccepted(c, "event to "+run, func(ctx context.Context, c *sdk.Client) error {
		_, err := c.SendEvent(ctx, run, sdk.Event{Name: WaitEvent, ID: "ev-" + run})
		return err
	}, func(err error) bool { return sdk.ReasonOf(err) == cairn.ReasonRunTerminal || sdk.IsConflict(err) })
	if ok {
		r.events.Add(1)
	}
	return ok
}

// cancel cancels a run until an instance accepts it (or the run has
// ended), for up to StartGiveUp.
func (r *round) cancel(c *sdk.Client, run string) bool {
	ok := r.untilAccepted(c, "cancel of "+run, func(ctx context.Context, c *sdk.Client) error {
		_, err := c.Cancel(ctx, run, "chaos")
		return err
	}, sdk.IsConflict)
	if ok {
		r.cancels.Add(1)
	}
	return ok
}

// untilAccepted calls op with c, then with each instance's client in
// turn, a quarter of a second apart, until it succeeds or fails with an
// error that settles the matter, for up to StartGiveUp; it reports
// whether that happened, and logs what was not accepted when not.
func (r *round) untilAccepted(c *sdk.Client, what string, op func(context.Context, *sdk.Client) error, settles func(error) bool) bool {
	deadline := time.Now().Add(r.cfg.StartGiveUp)
	for i := 0; time.Now().Before(deadline); i++ {
		if i > 0 {
			c = r.client[i%len(r.client)]
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := op(ctx, c)
		cancel()
		if err == nil || settles(err) {
			return true
		}
		time.Sleep(250 * time.Millisecond)
	}
	r.logf("chaos: %s not accepted yet", what)
	return false
}

// drain waits until every run started has ended or the drain timeout
// passes. It reads the status of each run still open (a full listing
// touches every run record and, with store faults injected, rarely gets
// through whole).
func (r *round) drain(ctx context.Context) {
	deadline := time.Now().Add(r.cfg.DrainTimeout)
	r.mu.Lock()
	open := make([]string, 0, len(r.runs))
	for id := range r.runs {
		open = append(open, id)
	}
	r.mu.Unlock()
	sort.Strings(open)
	for i := 0; ; i++ {
		late := time.Now().After(deadline) // this pass is the last
		open = r.stillOpen(ctx, r.client[i%len(r.client)], open)
		if len(open) == 0 {
			return
		}
		if late || ctx.Err() != nil {
			r.logf("chaos: drain timed out with %d runs open (e.g. %s)", len(open), open[0])
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stillOpen returns the runs of open whose status read does not say they
// ended, reading 8 at a time. A pass over a long round's thousands of runs
// one by one took minutes on a loaded machine, so a run that ended early
// in the pass was still counted open when the deadline came at its end;
// the pass that starts after the deadline is the last.
func (r *round) stillOpen(ctx context.Context, c *sdk.Client, open []string) []string {
	ended := make([]bool, len(open))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, id := range open {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// The status read: one GET of the record, not audited (a full
			// read writes an audit record each time, which made a drain of
			// MinIO take minutes of the checker's own writes).
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			res, err := c.API().GetRunStatusWithResponse(ctx, id, &client.GetRunStatusParams{})
			ended[i] = err == nil && res.JSON200 != nil && cairn.RunStatus(res.JSON200.Status).Terminal()
		}()
	}
	wg.Wait()
	still := open[:0]
	for i, id := range open {
		if !ended[i] {
			still = append(still, id)
		}
	}
	return still
}
