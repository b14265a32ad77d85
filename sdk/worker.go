package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
	"github.com/cairn-dev/cairn/sdk/codec"
)

// Worker defaults.
const (
	DefaultConcurrency  = 4
	DefaultDrainTimeout = 30 * time.Second
	// DefaultClaimWait is how long a claim is held open when nothing is
	// ready; the server caps it at 4/5 of its max request time.
	DefaultClaimWait = 20 * time.Second
)

const instrumentationName = "github.com/cairn-dev/cairn/sdk"

// WorkerOption configures a Worker.
type WorkerOption func(*workerConfig)

type workerConfig struct {
	concurrency  int
	id           string
	log          *slog.Logger
	drainTimeout time.Duration
	claimWait    time.Duration
	labels       map[string]string
	tp           trace.TracerProvider
	mp           metric.MeterProvider
	codec        *codec.Keyring // codec.go
}

// WithConcurrency bounds the bodies running at once [DefaultConcurrency].
// The worker reserves a slot before it claims: it never holds more leases
// than this, so no claimed step waits for a slot while its lease runs out.
func WithConcurrency(n int) WorkerOption {
	return func(c *workerConfig) {
		if n > 0 {
			c.concurrency = n
		}
	}
}

// WithName sets the worker's id, recorded on every attempt it runs and
// shown by `cairn workers` [host name and process id]. Characters the API
// does not accept become "-".
func WithName(name string) WorkerOption { return func(c *workerConfig) { c.id = name } }

// WithLogger sets the worker's logger [slog.Default()]. Step bodies get it
// with the attempt bound (StepContext.Logger).
func WithLogger(l *slog.Logger) WorkerOption { return func(c *workerConfig) { c.log = l } }

// WithDrainTimeout bounds the graceful drain on shutdown
// [DefaultDrainTimeout]: bodies still running then are cancelled
// (context.Cause is ErrShutdown) and, unless they return their output at
// once, reported with class interrupted. The engine runs an interrupted
// at_least_once step again; an at_most_once step that had started is
// failed instead (unless its retry policy lists interrupted in
// RetryAfterStart), so give such bodies a drain timeout they fit in.
func WithDrainTimeout(d time.Duration) WorkerOption {
	return func(c *workerConfig) { c.drainTimeout = d }
}

// WithClaimWait sets how long one claim is held open while nothing is
// ready [DefaultClaimWait].
func WithClaimWait(d time.Duration) WorkerOption { return func(c *workerConfig) { c.claimWait = d } }

// WithLabels sets free labels shown by `cairn workers`.
func WithLabels(labels map[string]string) WorkerOption {
	return func(c *workerConfig) { c.labels = labels }
}

// WithTracerProvider sets where step spans go [the global provider]. Each
// body runs in a span that is a child of the engine's step span (the
// lease's traceparent); spans the body opens from its StepContext nest
// under it.
func WithTracerProvider(tp trace.TracerProvider) WorkerOption {
	return func(c *workerConfig) { c.tp = tp }
}

// WithMeterProvider sets where the worker's metrics go [the global
// provider].
func WithMeterProvider(mp metric.MeterProvider) WorkerOption {
	return func(c *workerConfig) { c.mp = mp }
}

// Worker serves the task steps of the workflows registered with it: it
// registers them, long-polls for leases, runs the bodies, heartbeats their
// leases and reports how each ended, answering every refusal by its
// reason. Run one or many; each claims up to its own concurrency.
type Worker struct {
	c    *Client
	cfg  workerConfig
	id   string
	defs []*WorkflowDef
	log  *slog.Logger

	tracer  trace.Tracer
	metrics workerMetrics

	serving atomic.Bool
	readyMu sync.Mutex
	ready   chan struct{}

	// per Serve
	handlers map[handlerKey]Handler
	slots    chan struct{}
	hbEvery  time.Duration
	leaseTTL time.Duration
	// pubCtx bounds complete/fail retries: cancelled once the drain
	// timeout passed, so a worker cut off from the server still stops.
	pubCtx context.Context
	// claiming is Serve's context: while it is live, completes ask for
	// the next lease (eager dispatch).
	claiming context.Context

	mu       sync.Mutex
	inflight map[string]*attempt // by lease id
	ended    map[string]time.Time
	// scope is the run its claims are scoped to, set by RunHere (here.go):
	// empty for a worker that serves every run of its workflows.
	scope string
	// claimCancel cancels the claim in flight, when scopeTo changes the
	// scope (a claim held on a run that ended would wait for nothing).
	claimCancel context.CancelCauseFunc
}

type handlerKey struct{ workflow, version, step string }

// unnamedWorkers counts the workers this process made without WithName.
var unnamedWorkers atomic.Int64

// NewWorker returns a worker that talks to the API through c. It performs
// no I/O; Serve does.
func NewWorker(c *Client, opts ...WorkerOption) *Worker {
	cfg := workerConfig{concurrency: DefaultConcurrency, drainTimeout: DefaultDrainTimeout, claimWait: DefaultClaimWait}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	id := cfg.id
	if id == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		id = host + "-" + strconv.Itoa(os.Getpid())
		if n := unnamedWorkers.Add(1); n > 1 {
			// Not the process's first: an id of its own. The engine keeps
			// one record per id (the last registration's workflows) and
			// avoids a worker by id after an unservable fail, so workers
			// sharing one would take each other's steps, fail them as
			// unservable and make the engine avoid them all.
			id += "-" + strconv.FormatInt(n, 10)
		}
	}
	id = sanitizeID(id)
	w := &Worker{
		c: c, cfg: cfg, id: id, ready: make(chan struct{}),
		log:    cfg.log.With("worker", id),
		tracer: cfg.tp.Tracer(instrumentationName),
	}
	w.metrics = newWorkerMetrics(cfg.mp.Meter(instrumentationName))
	return w
}

var badIDChars = regexp.MustCompile(`[^A-Za-z0-9_.:@-]`)

func sanitizeID(id string) string {
	id = badIDChars.ReplaceAllString(id, "-")
	if id == "" || !regexp.MustCompile(`^[A-Za-z0-9]`).MatchString(id) {
		id = "w" + id
	}
	if len(id) > 128 {
		id = id[:128]
	}
	return id
}

// Register adds workflows for the worker to serve. Call it before Serve.
func (w *Worker) Register(defs ...*WorkflowDef) *Worker {
	w.defs = append(w.defs, defs...)
	return w
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.id }

// Ready returns a channel closed once Serve has registered the worker and
// claims work: the signal for a readiness probe. Once Serve returns, Ready
// gives a new, open channel; call it at each probe.
func (w *Worker) Ready() <-chan struct{} {
	w.readyMu.Lock()
	defer w.readyMu.Unlock()
	return w.ready
}

// InFlight returns the number of leases the worker holds (claimed, and not
// yet reported or dropped): never more than its concurrency.
func (w *Worker) InFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight)
}

// Serve registers the worker and serves steps until ctx is cancelled,
// then drains: it stops claiming, lets running bodies finish for up to the
// drain timeout, cancels the rest and reports them as interrupted, and
// returns nil.
// It returns an error when the definitions are invalid, registration is
// refused, or the API refuses the worker's key.
func (w *Worker) Serve(ctx context.Context) error { return w.serve(ctx, nil) }

// serve is Serve. With here set (RunHere), it calls here once registered,
// and claims on the context here returns until that context ends.
func (w *Worker) serve(ctx context.Context, here func(context.Context) (context.Context, error)) error {
	if !w.serving.CompareAndSwap(false, true) {
		return errors.New("cairn: Serve is already running on this worker")
	}
	defer w.serving.Store(false)
	defer func() {
		w.readyMu.Lock()
		select {
		case <-w.ready:
			w.ready = make(chan struct{})
		default:
		}
		w.readyMu.Unlock()
	}()

	wfs, err := w.prepare()
	if err != nil {
		return err
	}
	reg, err := w.register(ctx, wfs)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	w.hbEvery = time.Duration(reg.HeartbeatMs) * time.Millisecond
	w.leaseTTL = time.Duration(reg.LeaseTtlMs) * time.Millisecond
	if w.hbEvery <= 0 {
		w.hbEvery = 10 * time.Second
	}
	if w.leaseTTL <= w.hbEvery {
		w.leaseTTL = 3 * w.hbEvery
	}
	uninstall := installUsageProcessor(w.cfg.tp)
	defer uninstall()

	w.readyMu.Lock()
	close(w.ready)
	w.readyMu.Unlock()
	w.log.Info("worker serving", "server", w.c.server, "workflows", len(wfs), "concurrency", w.cfg.concurrency,
		"heartbeat", w.hbEvery, "lease_ttl", w.leaseTTL)

	// Bodies outlive ctx: they drain after it is cancelled.
	bodyBase, cancelBodies := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelBodies(ErrShutdown)
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeatLoop(hbCtx)
	}()
	defer func() {
		stopHB()
		<-hbDone
	}()

	pubCtx, stopPub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPub()
	w.pubCtx = pubCtx

	claimCtx := ctx
	var claimErr error
	if here != nil {
		claimCtx, claimErr = here(ctx)
	}
	var bodies sync.WaitGroup
	if claimErr == nil {
		w.claiming = claimCtx
		claimErr = w.claimLoops(claimCtx, bodyBase, wfs, &bodies)
	}
	w.drain(&bodies, stopPub)
	// Say so, so that the worker is listed as gone at once, not after the
	// server's alive window; best effort, bounded.
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if err := w.c.StopWorker(stopCtx, w.id); err != nil {
		w.log.Debug("could not say the worker stopped", "err", err)
	}
	cancelStop()
	if claimErr != nil {
		w.log.Error("worker stopped", "err", claimErr)
	} else {
		w.log.Info("worker stopped")
	}
	return claimErr
}

// prepare builds the definitions and the handler table.
func (w *Worker) prepare() ([]client.Workflow, error) {
	if len(w.defs) == 0 {
		return nil, errors.New("cairn: the worker serves no workflow: call Register before Serve")
	}
	w.handlers = map[handlerKey]Handler{}
	var errs []error
	var wfs []client.Workflow
	seen := map[string]bool{}
	for _, d := range w.defs {
		def, err := d.Definition()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		key := def.Name + "@" + def.Version
		if seen[key] {
			errs = append(errs, fmt.Errorf("workflow %s registered twice with this worker", key))
			continue
		}
		seen[key] = true
		for id, h := range d.handlers {
			w.handlers[handlerKey{def.Name, def.Version, id}] = h
		}
		// The wire form: the generated type, filled from the domain type's
		// JSON (durations as Go duration strings, as the API reads them).
		b, err := json.Marshal(def)
		if err != nil {
			return nil, err
		}
		var cw client.Workflow
		if err := json.Unmarshal(b, &cw); err != nil {
			return nil, fmt.Errorf("workflow %s: %w", key, err)
		}
		wfs = append(wfs, cw)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("cairn: invalid workflow definitions: %w", errors.Join(errs...))
	}
	w.slots = make(chan struct{}, w.cfg.concurrency)
	w.mu.Lock()
	w.inflight = map[string]*attempt{}
	w.ended = map[string]time.Time{}
	w.mu.Unlock()
	return wfs, nil
}

// register announces the worker, retrying while the server is unreachable
// or busy.
func (w *Worker) register(ctx context.Context, wfs []client.Workflow) (*client.RegisterResponse, error) {
	req := client.RegisterRequest{WorkerId: &w.id, Workflows: wfs}
	if len(w.cfg.labels) > 0 {
		req.Labels = &w.cfg.labels
	}
	b := backoff{min: 200 * time.Millisecond, max: 5 * time.Second}
	for {
		resp, err := w.c.api.RegisterWorkerWithResponse(ctx, req)
		err = w.c.check(err, resp)
		if err == nil {
			return resp.JSON200, nil
		}
		if !temporary(err) || ctx.Err() != nil {
			return nil, fmt.Errorf("cairn: registering worker %s: %w", w.id, err)
		}
		w.log.Warn("registering failed; retrying", "err", err)
		if !b.sleep(ctx) {
			return nil, ctx.Err()
		}
	}
}

// claimLoops runs one claim loop per maxClaim slots, so that a worker
// with more free slots than one claim may ask for holds enough claims to
// fill them all (a start handed to a held claim costs no lease write).
// The first loop to stop with an error stops the others.
func (w *Worker) claimLoops(ctx context.Context, bodyBase context.Context, wfs []client.Workflow, bodies *sync.WaitGroup) error {
	g, ctx := errgroup.WithContext(ctx)
	for range (cap(w.slots) + maxClaim - 1) / maxClaim {
		g.Go(func() error { return w.claimLoop(ctx, bodyBase, wfs, bodies) })
	}
	return g.Wait()
}

// claimLoop reserves slots, claims up to that many leases, and starts a
// body per lease, until ctx is cancelled.
func (w *Worker) claimLoop(ctx context.Context, bodyBase context.Context, wfs []client.Workflow, bodies *sync.WaitGroup) error {
	waits := claimWaits{
		failures: backoff{min: 200 * time.Millisecond, max: 10 * time.Second},
		quick:    backoff{min: 50 * time.Millisecond, max: time.Second},
	}
	for {
		n := w.reserve(ctx)
		if n == 0 {
			return nil
		}
		began := time.Now()
		leases, pause, err := w.claim(ctx, n)
		if err != nil {
			w.release(n)
			if stop, err := w.claimFailed(ctx, err, wfs, &waits.failures); stop {
				return err
			}
			continue
		}
		waits.failures.reset()
		w.startBodies(leases, n, bodyBase, bodies)
		if !waits.afterClaim(ctx, len(leases), pause, began) {
			return nil
		}
	}
}

// maxClaim is the most leases one claim may ask for (the API's maximum):
// a worker with more slots holds a claim per maxClaim slots.
const maxClaim = 100

// reserve reserves slots before a claim: it blocks for one, then takes
// any others that are free, up to maxClaim, and the claim asks for no
// more than that. It returns how many it reserved, or 0 once ctx is
// cancelled.
func (w *Worker) reserve(ctx context.Context) int {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < min(cap(w.slots), maxClaim) {
		select {
		case w.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// claimFailed answers a claim that failed: when the server no longer
// knows the worker it registers again, when the key is refused it stops,
// and otherwise it waits out the failures backoff. It reports whether the
// claim loop stops, and with what error (nil once ctx is cancelled).
func (w *Worker) claimFailed(ctx context.Context, err error, wfs []client.Workflow, failures *backoff) (stop bool, _ error) {
	if ctx.Err() != nil {
		return true, nil
	}
	var ae *APIError
	switch {
	case ReasonOf(err) == cairn.ReasonRunTerminal && w.scoped() != "":
		// The run the claims are scoped to has ended: RunHere learns so
		// and stops claiming, or scopes them to the run it continued as.
		w.log.Debug("the run the claims are scoped to has ended", "run", w.scoped())
		return !failures.sleep(ctx), nil
	case IsNotFound(err):
		// The worker's record is gone (a wiped bucket, a new
		// deployment): register again.
		w.log.Warn("the server does not know this worker; registering again", "err", err)
		if _, err := w.register(ctx, wfs); err != nil {
			if ctx.Err() != nil {
				return true, nil
			}
			return true, err
		}
		return false, nil
	case errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403):
		return true, fmt.Errorf("cairn: claiming steps: %w", err)
	}
	w.log.Warn("claim failed; retrying", "err", err)
	return !failures.sleep(ctx), nil
}

// startBodies starts a body per lease claimed on the n slots reserved,
// each on its slot, and hands back the slots no lease came for.
func (w *Worker) startBodies(leases []client.Lease, n int, bodyBase context.Context, bodies *sync.WaitGroup) {
	taken := min(len(leases), n)
	w.release(n - taken)
	for i, l := range leases {
		if i >= n {
			// More leases than asked for: a server bug. Never run more
			// than the slots reserved; hand them back at once.
			w.log.Error("the server returned more leases than claimed; releasing the extra ones", "max", n, "got", len(leases))
			a := w.track(l, bodyBase)
			go func() {
				defer w.untrack(a)
				w.publishFail(a, cairn.ClassUnservable, "worker "+w.id+" claimed fewer leases than it got", nil, Usage{})
			}()
			continue
		}
		a := w.track(l, bodyBase)
		bodies.Add(1)
		go func() {
			defer bodies.Done()
			defer w.release(1)
			// Eager dispatch: a complete may hand back this slot's
			// next lease; run it on the same slot.
			for next := a; next != nil; {
				next = w.handle(next, bodyBase)
			}
		}()
	}
}

// claimWaits are the claim loop's backoffs: after failed claims, after
// empty answers that came at once, and between empty claims when the
// server asks for a pause (pause_ms).
type claimWaits struct {
	failures, quick, idle backoff
}

// afterClaim waits, if need be, after a claim that got leases leases and
// began at began, before the next claim. It returns false once ctx is
// cancelled while waiting.
func (c *claimWaits) afterClaim(ctx context.Context, leases int, pause time.Duration, began time.Time) bool {
	switch {
	case leases == 0 && pause > 0:
		// The server holds claims briefly and asks for a pause (on
		// Lambda a held claim is an execution environment): wait
		// here, where waiting costs nothing, and let other workers'
		// claims and the hints pick up what becomes ready meanwhile.
		idlePause(&c.idle, pause)
		return c.idle.sleep(ctx)
	case leases == 0 && time.Since(began) < 50*time.Millisecond:
		// The server answered empty at once (it is draining, or holds
		// no claims): do not spin.
		return c.quick.sleep(ctx)
	default:
		c.quick.reset()
		if leases > 0 {
			c.idle.reset()
		}
		return true
	}
}

func (w *Worker) release(n int) {
	for range n {
		<-w.slots
	}
}

// claim asks for up to n leases. pause is how long the server asks the
// worker to wait before claiming again when there was none (pause_ms).
func (w *Worker) claim(ctx context.Context, n int) (_ []client.Lease, pause time.Duration, _ error) {
	max := int64(n)
	wait := w.cfg.claimWait.Milliseconds()
	req := client.ClaimRequest{WorkerId: w.id, Max: &max, WaitMs: &wait}
	cctx, cancel := context.WithTimeout(ctx, w.cfg.claimWait+30*time.Second)
	defer cancel()
	if run := w.scoped(); run != "" {
		req.Run = &run
		var rescope context.CancelCauseFunc
		cctx, rescope = context.WithCancelCause(cctx)
		defer rescope(nil)
		w.mu.Lock()
		w.claimCancel = rescope
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			w.claimCancel = nil
			w.mu.Unlock()
		}()
	}
	resp, err := w.c.api.ClaimStepsWithResponse(cctx, req)
	if err := w.c.check(err, resp); err != nil {
		if errors.Is(context.Cause(cctx), errRescoped) {
			// Its run ended: no lease of it was lost.
			return nil, 0, nil
		}
		return nil, 0, err
	}
	if p := resp.JSON200.PauseMs; p != nil && *p > 0 {
		pause = min(time.Duration(*p)*time.Millisecond, maxClaimPause)
	}
	return resp.JSON200.Leases, pause, nil
}

// maxClaimPause bounds the pause a server may ask for between empty
// claims (the server's own bound is a minute).
const maxClaimPause = time.Minute

// idlePause is the wait after an empty claim whose answer asked for a
// pause: it starts at a second (or the pause, when shorter) and doubles
// with each empty claim up to the pause, with jitter (half to all of
// it), so a worker that just ran out of work looks again soon, a worker
// idle for long claims about once per hold + 3/4 of the pause, and a
// fleet of idle workers does not claim in step. Leases reset it.
func idlePause(b *backoff, pause time.Duration) {
	if b.max != pause {
		b.min, b.max = min(time.Second, pause), pause
		b.cur = min(b.cur, pause)
	}
}

// attempt is one lease the worker holds.
type attempt struct {
	lease  client.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	began  time.Time

	mu       sync.Mutex
	finished bool // published or dropped: nothing more goes out for it
	// settled is closed once the attempt is untracked: its outcome was
	// published or dropped.
	settled    chan struct{}
	settleOnce sync.Once
	// started is set once the engine acknowledged started: before, an
	// at_most_once attempt cannot be reported at all (not_started).
	started atomic.Bool
	// body is the running body's context, for the drain to report the
	// state patch and usage of a body it cuts off.
	body atomic.Pointer[stepCtx]
	// continueAs is the input of the run a function's run continues as
	// (ContinueAsNew): its complete carries it instead of an output.
	continueAs json.RawMessage
}

// finish claims the right to publish (or drop) the attempt's outcome.
func (a *attempt) finish() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.finished {
		return false
	}
	a.finished = true
	return true
}

// track records a lease as held, so heartbeats cover it from now on.
func (w *Worker) track(l client.Lease, base context.Context) *attempt {
	ctx, cancel := context.WithCancelCause(base)
	a := &attempt{lease: l, ctx: ctx, cancel: cancel, began: time.Now(), settled: make(chan struct{})}
	w.mu.Lock()
	w.inflight[l.Id] = a
	w.mu.Unlock()
	w.metrics.inflight.Add(context.Background(), 1)
	return a
}

func (w *Worker) untrack(a *attempt) {
	w.mu.Lock()
	_, ok := w.inflight[a.lease.Id]
	delete(w.inflight, a.lease.Id)
	w.mu.Unlock()
	if ok {
		w.metrics.inflight.Add(context.Background(), -1)
	}
	a.cancel(context.Canceled)
	a.settleOnce.Do(func() { close(a.settled) })
}

// runEnded records that a run ended: its bodies are cancelled, and leases
// of it that arrive later are dropped without running.
func (w *Worker) runEnded(run string) {
	now := time.Now()
	w.mu.Lock()
	w.ended[run] = now
	for r, at := range w.ended {
		if now.Sub(at) > 10*time.Minute {
			delete(w.ended, r)
		}
	}
	var cancel []*attempt
	for _, a := range w.inflight {
		if a.lease.Run == run {
			cancel = append(cancel, a)
		}
	}
	w.mu.Unlock()
	for _, a := range cancel {
		a.cancel(ErrRunEnded)
	}
}

func (w *Worker) hasEnded(run string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.ended[run]
	return ok
}

// handle runs one lease to its end: started, the body, complete or fail.
//
// It returns the next attempt to run on the same slot, already tracked,
// when the complete handed one back (eager dispatch), or nil.
func (w *Worker) handle(a *attempt, base context.Context) (next *attempt) {
	defer w.untrack(a)
	l := a.lease
	log := w.log.With("run", l.Run, "workflow", l.Workflow, "version", l.Version, "step", l.Step, "attempt", l.Attempt)
	h, input, ok := w.admit(a, log)
	if !ok {
		return
	}

	// The body's context: the lease's, bounded by the attempt timeout,
	// carrying the step span (a child of the engine's step span).
	ctx := a.ctx
	if l.TimeoutAt != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, *l.TimeoutAt, ErrAttemptTimeout)
		defer cancel()
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": l.Traceparent})
	ctx, span := w.tracer.Start(ctx, "step "+l.Workflow+"/"+l.Step,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("cairn.run", l.Run), attribute.String("cairn.workflow", l.Workflow),
			attribute.String("cairn.version", l.Version), attribute.String("cairn.step", l.Step),
			attribute.Int64("cairn.attempt", l.Attempt), attribute.String("cairn.worker", w.id),
		))
	defer span.End()
	if tid := span.SpanContext().TraceID(); tid.IsValid() {
		log = log.With("trace_id", tid.String())
	}
	sc := &stepCtx{
		Context: ctx,
		info: StepInfo{
			Run: l.Run, Workflow: l.Workflow, Version: l.Version, Step: l.Step, Attempt: int(l.Attempt),
			Delivery: cairn.Delivery(l.Delivery), IdempotencyKey: l.IdempotencyKey, Correlation: deref(l.Correlation),
			Worker: w.id, Lease: l.Id, TraceParent: l.Traceparent, TimeoutAt: deref(l.TimeoutAt), Item: itemIndex(l.Item),
		},
		input: input, outputs: l.Steps, state: l.State, log: log, usage: &usageAcc{},
		payload: w.leasePayloads(l.Id), att: a, worker: w,
		resumed: deref(l.Resumed), resume: l.Resume, interrupt: l.Interrupt,
	}
	a.body.Store(sc)
	start := time.Now()
	out, err := w.runBody(sc, h)
	elapsed := time.Since(start)
	patch, usage := sc.ended()
	return w.report(a, sc, span, bodyResult{out: out, err: err, elapsed: elapsed, patch: patch, usage: usage}, base)
}

// admit readies a lease's body to run: it fails a lease this worker does
// not serve as unservable, drops a lease of a run that ended, reads the
// input, and (for an at_most_once lease) tells the engine the body
// starts. It reports whether to run the body, and its handler and input.
func (w *Worker) admit(a *attempt, log *slog.Logger) (_ Handler, input json.RawMessage, ok bool) {
	l := a.lease
	h := w.handlers[handlerKey{l.Workflow, l.Version, l.Step}]
	if h == nil {
		log.Warn("failing a lease this worker does not serve as unservable; the engine offers it to another worker")
		w.publishFail(a, cairn.ClassUnservable,
			fmt.Sprintf("worker %s does not serve step %s of %s@%s", w.id, l.Step, l.Workflow, l.Version), nil, Usage{})
		w.metrics.steps.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", "unservable")))
		return nil, nil, false
	}
	if w.hasEnded(l.Run) {
		a.finish()
		log.Info("dropping a lease of a run that ended")
		return nil, nil, false
	}
	input = w.prefetchInput(a.ctx, l.Id, l.Input, log) // before started: a read that fails costs no attempt
	if !w.started(a, log) {
		return nil, nil, false
	}
	a.started.Store(true)
	return h, input, true
}

// bodyResult is how a body ended: what it returned, how long it ran, and
// the state patch and usage it recorded.
type bodyResult struct {
	out     any
	err     error
	elapsed time.Duration
	patch   map[string]json.RawMessage
	usage   Usage
}

// report publishes how the body of a ended, by the cause that ended it:
// nothing when the engine ended the lease or the run, interrupted when
// the drain cut it off, else completed or failed (by the error's class).
// sc is the body's context and span its step span. It returns the next
// attempt when the complete handed one back (eager dispatch), or nil.
func (w *Worker) report(a *attempt, sc *stepCtx, span trace.Span, r bodyResult, base context.Context) *attempt {
	log, elapsed, err := sc.log, r.elapsed, r.err
	switch cause := context.Cause(a.ctx); {
	case errors.Is(cause, ErrLeaseLost), errors.Is(cause, ErrRunEnded), errors.Is(cause, errSuspended), errors.Is(err, errSuspended):
		// The engine said so already (or ended the attempt at a function's
		// suspension): publish nothing more.
		a.finish()
		span.SetStatus(codes.Error, cause.Error())
		log.Info("body cancelled; nothing is reported", "cause", cause, "elapsed", elapsed)
		w.metrics.record("dropped", elapsed)
		return nil
	case errors.Is(cause, ErrShutdown) && err != nil:
		// Cut off by the drain, and the body did not finish: interrupted.
		// (A body that returns its output when cancelled is reported as
		// completed, below: the work is done, whatever its delivery.)
		msg := w.interrupted() + ": " + errorMessage(err)
		span.SetStatus(codes.Error, msg)
		span.SetAttributes(attribute.String("cairn.error.class", cairn.ClassInterrupted))
		w.metrics.record("interrupted", elapsed)
		log.Info("step interrupted by the shutdown", "elapsed", elapsed)
		w.publishFail(a, cairn.ClassInterrupted, msg, r.patch, r.usage)
		return nil
	}
	if err == nil {
		data, merr := toJSON(r.out)
		if merr != nil {
			err = Fatal(fmt.Errorf("encoding the output of step %s: %w", a.lease.Step, merr))
		} else {
			span.SetStatus(codes.Ok, "")
			w.metrics.record("completed", elapsed)
			log.Debug("step completed", "elapsed", elapsed)
			return w.eager(w.publishComplete(a, data, r.patch, r.usage, log), base)
		}
	}
	if ie := (*InterruptError)(nil); errors.As(err, &ie) {
		span.SetStatus(codes.Ok, "interrupted")
		w.metrics.record("interrupt", elapsed)
		log.Info("step interrupted by its body", "elapsed", elapsed)
		w.publishInterrupt(a, ie, r.patch, r.usage, log) // interrupt.go
		return nil
	}
	class, msg := classify(err)
	if errors.Is(context.Cause(sc.Context), ErrAttemptTimeout) && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAttemptTimeout)) {
		class, msg = cairn.ClassTimeout, "attempt exceeded its timeout: "+msg
	}
	span.SetStatus(codes.Error, msg)
	span.SetAttributes(attribute.String("cairn.error.class", class))
	w.metrics.record("failed", elapsed)
	log.Info("step failed", "class", class, "err", msg, "elapsed", elapsed)
	w.publishFail(a, class, msg, r.patch, r.usage)
	return nil
}

// runBody runs a body, turning a panic into an error of class panic. The
// stack goes to the worker's log, never to the engine.
func (w *Worker) runBody(sc *stepCtx, h Handler) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			sc.log.Error("step body panicked; reporting it as class panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = Failure(cairn.ClassPanic, fmt.Errorf("panic: %v", r))
		}
	}()
	if err := sc.resolveInput(); err != nil {
		return nil, err
	}
	return h(sc)
}

// interrupted says why an attempt was cut off by the drain.
func (w *Worker) interrupted() string {
	return "worker " + w.id + " shut down before the step finished (drain timeout " + w.cfg.drainTimeout.String() + ")"
}

// errorMessage is a body error's message, as classify gives it.
func errorMessage(err error) string {
	_, msg := classify(err)
	return msg
}

// started tells the engine the body is about to run. It reports whether
// to run it. An at_least_once lease is started by its claim (the
// protocol's started is optional for it and writes nothing): no call, one
// round trip less per step. An at_most_once lease must be started: the
// engine records it, and never offers the step again.
func (w *Worker) started(a *attempt, log *slog.Logger) bool {
	if cairn.Delivery(a.lease.Delivery) != cairn.AtMostOnce {
		return true
	}
	b := backoff{min: 100 * time.Millisecond, max: 2 * time.Second}
	giveUp := time.Now().Add(w.leaseTTL)
	for {
		resp, err := w.c.api.StepStartedWithResponse(a.ctx, a.lease.Id)
		err = w.c.check(err, resp)
		if err == nil {
			return true
		}
		if a.ctx.Err() != nil {
			a.finish()
			log.Info("lease cancelled before its body started", "cause", context.Cause(a.ctx))
			return false
		}
		if temporary(err) && time.Now().Before(giveUp) {
			log.Warn("sending started failed; retrying", "err", err)
			if !b.sleep(a.ctx) {
				continue
			}
			continue
		}
		a.finish()
		w.refused(a, "started", err, log)
		return false
	}
}

// publishComplete reports a body's output. complete is idempotent: a
// retry after a lost answer is told already_applied, which is success.
//
// While the worker is still claiming, the complete asks for the slot's
// next lease (claim_next, eager dispatch) and returns what it got: a busy
// worker then does one call per step instead of complete + claim. A
// retry after a lost answer is told already_applied and gets no lease; a
// lease lost that way is recovered by the reaper at its expiry, as one
// in a lost claim answer is.
func (w *Worker) publishComplete(a *attempt, output json.RawMessage, patch map[string]json.RawMessage, usage Usage, log *slog.Logger) (leases []client.Lease) {
	if !a.finish() {
		return nil
	}
	output, patch, err := w.sealOutcome(a.lease, output, patch) // codec.go
	if err != nil {
		w.sendFail(w.pubCtx, a, cairn.ClassFatal, err.Error(), nil, usage, log)
		return nil
	}
	req := client.CompleteRequest{Output: output, Usage: usageTo(usage), Summary: summaryOf(a), Attributes: attributesOf(a)}
	if len(patch) > 0 {
		req.StatePatch = &patch
	}
	if in := a.continueAs; in != nil { // a function's run continues as new
		if in, err = sealTop(w.keyring(), in, w.clearOf(a.lease.Workflow, a.lease.Version)); err != nil {
			w.sendFail(w.pubCtx, a, cairn.ClassFatal, "encrypting the input of the run it continues as: "+err.Error(), nil, usage, log)
			return nil
		}
		req.Output, req.ContinueAsNew = nil, &client.ContinueAsNew{Input: in}
	} else if w.claiming != nil && w.claiming.Err() == nil && w.scoped() == "" {
		// (Not when scoped to a run: claim_next is not, and could hand
		// back a step of another run.)
		req.ClaimNext = &client.ClaimNext{Max: 1}
	}
	err = w.retry(w.pubCtx, a, func(ctx context.Context) error {
		resp, err := w.c.api.CompleteStepWithResponse(ctx, a.lease.Id, req)
		if err := w.c.check(err, resp); err != nil {
			return err
		}
		if resp.JSON200 != nil && resp.JSON200.Leases != nil {
			leases = *resp.JSON200.Leases
		}
		return nil
	})
	var ae *APIError
	if ReasonOf(err) == cairn.ReasonTooLarge && errors.As(err, &ae) {
		// The output (or the state patch) would grow the run record past
		// its limit. Nothing was applied and the lease is still held:
		// retrying complete cannot help, so fail the step with a class
		// that says why (the engine does not retry it).
		detail := ae.Detail
		if detail == "" {
			detail = ae.Error()
		}
		log.Error("the engine refused the step's output as too large; failing the step", "detail", detail)
		w.sendFail(w.pubCtx, a, cairn.ClassOutputTooLarge, "the engine refused the step's output as too large: "+detail, patch, usage, log)
		return nil
	}
	if errors.As(err, &ae) && ae.Status == 422 {
		// The engine refused the output itself (too large, a state patch
		// that is not JSON): retrying cannot help, so fail the attempt.
		log.Error("the engine refused the step's output; failing the attempt", "err", err)
		w.sendFail(w.pubCtx, a, cairn.ClassFatal, "the engine refused the step's output: "+err.Error(), nil, usage, log)
		return nil
	}
	w.answered(a, "complete", err, log)
	if err != nil {
		return nil
	}
	return leases
}

// eager tracks the first lease a complete handed back, to run on the
// completed attempt's slot, and fails any more as unservable (a server
// bug: claim_next asks for one).
func (w *Worker) eager(leases []client.Lease, base context.Context) *attempt {
	var next *attempt
	for i, l := range leases {
		a := w.track(l, base)
		if i == 0 {
			next = a
			continue
		}
		w.log.Error("the server returned more leases than claim_next asked for; releasing the extra ones", "got", len(leases))
		go func() {
			defer w.untrack(a)
			w.publishFail(a, cairn.ClassUnservable, "worker "+w.id+" claimed fewer leases than it got", nil, Usage{})
		}()
	}
	return next
}

// publishFail reports a body's error.
func (w *Worker) publishFail(a *attempt, class, msg string, patch map[string]json.RawMessage, usage Usage) {
	if !a.finish() {
		return
	}
	l := a.lease
	log := w.log.With("run", l.Run, "step", l.Step, "attempt", l.Attempt)
	w.sendFail(w.pubCtx, a, class, msg, patch, usage, log)
}

func (w *Worker) sendFail(ctx context.Context, a *attempt, class, msg string, patch map[string]json.RawMessage, usage Usage, log *slog.Logger) {
	req := client.FailRequest{Error: client.ErrorInfo{Class: class, Message: msg}, Usage: usageTo(usage), Summary: summaryOf(a)}
	if _, sealed, err := w.sealOutcome(a.lease, nil, patch); err == nil { // codec.go
		patch = sealed
	} else {
		patch = nil
		req.Error.Message += " (state patch dropped: " + err.Error() + ")"
	}
	if len(patch) > 0 {
		req.StatePatch = &patch
	}
	send := func(ctx context.Context) error {
		resp, err := w.c.api.FailStepWithResponse(ctx, a.lease.Id, req)
		return w.c.check(err, resp)
	}
	err := w.retry(ctx, a, send)
	var ae *APIError
	if ReasonOf(err) == cairn.ReasonTooLarge && req.StatePatch != nil && errors.As(err, &ae) {
		// The state patch would grow the run record past its limit: the
		// failure matters more than the patch. Once more without it.
		detail := ae.Detail
		if detail == "" {
			detail = ae.Error()
		}
		log.Warn("fail refused as too large; sending it again without the state patch", "detail", detail)
		req.StatePatch = nil
		req.Error.Message += " (state patch dropped: " + detail + ")"
		err = w.retry(ctx, a, send)
	}
	w.answered(a, "fail", err, log)
}

// retry calls fn until it gets an answer that is not temporary, backing
// off, for up to a few lease TTLs (heartbeats keep the lease alive
// meanwhile) or until ctx ends. Calls outlive Serve's context: a step that
// finished during the drain is still reported.
func (w *Worker) retry(ctx context.Context, a *attempt, fn func(ctx context.Context) error) error {
	b := backoff{min: 100 * time.Millisecond, max: 5 * time.Second}
	giveUp := time.Now().Add(max(time.Minute, 3*w.leaseTTL))
	for {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := fn(rctx)
		cancel()
		if err == nil || !temporary(err) && !errors.Is(err, context.DeadlineExceeded) || time.Now().After(giveUp) || ctx.Err() != nil {
			return err
		}
		if errors.Is(context.Cause(a.ctx), ErrLeaseLost) || errors.Is(context.Cause(a.ctx), ErrRunEnded) {
			return err // a heartbeat learned the outcome meanwhile
		}
		w.log.Warn("reporting a step failed; retrying", "run", a.lease.Run, "step", a.lease.Step, "attempt", a.lease.Attempt, "err", err)
		if !b.sleep(ctx) {
			return err
		}
	}
}

// checkpoint records a function's operations under a's lease (with a
// suspension, ending the attempt), retrying what changed nothing. A
// refusal is answered by its reason (the body's context is cancelled);
// an operation the engine refuses (the history's limits) fails the body.
func (w *Worker) checkpoint(a *attempt, req client.CheckpointRequest) error {
	// Sent on the publishing context: a draining worker's last checkpoint
	// (its suspension) goes out after the body's context is cancelled.
	err := w.retry(w.pubCtx, a, func(ctx context.Context) error {
		resp, err := w.c.api.CheckpointStepWithResponse(ctx, a.lease.Id, req)
		return w.c.check(err, resp)
	})
	var ae *APIError
	cause := context.Cause(a.ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(cause, ErrLeaseLost) || errors.Is(cause, ErrRunEnded):
		return cause
	case errors.As(err, &ae) && ae.Status == 422:
		return Fatal(fmt.Errorf("the engine refused the function's checkpoint: %w", err))
	}
	w.refused(a, "checkpoint", err, w.log.With("run", a.lease.Run, "step", a.lease.Step, "attempt", a.lease.Attempt))
	return err
}

// answered handles the answer to complete or fail.
func (w *Worker) answered(a *attempt, call string, err error, log *slog.Logger) {
	if err == nil {
		return
	}
	w.refused(a, call, err, log)
}

// refused answers a refused worker call by its reason, as the protocol
// says: already_applied is success, fenced drops the work, run_terminal
// stops the run's bodies, not_started is a worker bug.
func (w *Worker) refused(a *attempt, call string, err error, log *slog.Logger) {
	switch reason := ReasonOf(err); reason {
	case cairn.ReasonAlreadyApplied:
		log.Debug(call+": already applied (an earlier answer was lost); treated as success", "detail", err)
	case cairn.ReasonFenced:
		a.cancel(ErrLeaseLost)
		log.Warn(call+" refused: the lease was fenced (reclaimed, or another attempt finished the step); the work is dropped", "detail", err)
	case cairn.ReasonRunTerminal:
		w.runEnded(a.lease.Run)
		log.Info(call+" refused: the run has ended; its bodies are stopped", "detail", err)
	case cairn.ReasonNotStarted:
		log.Error("WORKER BUG: "+call+" of an at_most_once attempt was refused as not_started: the engine never recorded its started call", "detail", err)
	case cairn.ReasonTooLarge:
		log.Error(call+" refused: the run record is too large even for it; the lease is left to expire and the engine will recover the attempt", "detail", err)
	default:
		if IsNotFound(err) {
			log.Warn(call+": the server does not know this lease; the work is dropped", "err", err)
			return
		}
		log.Error(call+" failed; the lease is left to expire and the engine will recover the attempt", "err", err)
	}
}

// heartbeatLoop extends every held lease once per heartbeat period, in one
// batched call per 100 leases, and cancels the bodies whose leases were
// refused.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(w.hbEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		ids := make([]string, 0, len(w.inflight))
		for id := range w.inflight {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		for len(ids) > 0 {
			batch := ids[:min(len(ids), 100)]
			ids = ids[len(batch):]
			w.heartbeat(ctx, batch)
		}
	}
}

func (w *Worker) heartbeat(ctx context.Context, ids []string) {
	hctx, cancel := context.WithTimeout(ctx, max(w.hbEvery, 5*time.Second))
	defer cancel()
	resp, err := w.c.api.HeartbeatStepsWithResponse(hctx, client.HeartbeatManyRequest{Leases: ids})
	if err := w.c.check(err, resp); err != nil {
		if ctx.Err() == nil {
			w.log.Warn("heartbeat failed; leases expire unless a later one lands", "leases", len(ids), "err", err)
		}
		return
	}
	for _, r := range resp.JSON200.Results {
		w.mu.Lock()
		a := w.inflight[r.Lease]
		w.mu.Unlock()
		if a == nil {
			continue
		}
		switch reason := Reason(deref(r.Reason)); reason {
		case "":
			if r.Error != nil {
				w.log.Debug("heartbeat of one lease failed", "run", a.lease.Run, "step", a.lease.Step, "attempt", a.lease.Attempt, "err", *r.Error)
			}
		case cairn.ReasonFenced:
			w.log.Warn("heartbeat fenced: the lease was reclaimed; cancelling the body", "run", a.lease.Run, "step", a.lease.Step, "attempt", a.lease.Attempt)
			a.cancel(ErrLeaseLost)
		case cairn.ReasonRunTerminal:
			w.log.Info("heartbeat: the run has ended; cancelling its bodies", "run", a.lease.Run)
			w.runEnded(a.lease.Run)
		case cairn.ReasonAlreadyApplied:
			// The attempt's complete/fail landed; its answer is on its way.
		default:
			w.log.Error("heartbeat refused", "run", a.lease.Run, "step", a.lease.Step, "attempt", a.lease.Attempt, "reason", reason)
		}
	}
}

// cutOffWait is how long the drain gives bodies it cancelled to return
// and report what they did, before it reports them itself.
const cutOffWait = time.Second

// drain waits for running bodies up to the drain timeout, then cuts off
// the rest: it cancels them (ErrShutdown) and gives them a moment to
// return. A body that returns is reported by its own goroutine (its output
// if it has one, else class interrupted); one that does not is reported
// here as interrupted, with the state patch and usage it recorded so far.
// An at_most_once attempt whose started was never acknowledged cannot be
// reported (the engine would refuse it as not_started): its lease is left
// to expire, and the engine offers the step again only if started never
// arrived.
func (w *Worker) drain(bodies *sync.WaitGroup, stopPublishing func()) {
	done := make(chan struct{})
	go func() {
		bodies.Wait()
		close(done)
	}()
	if n := w.InFlight(); n > 0 {
		w.log.Info("draining: waiting for running steps", "in_flight", n, "timeout", w.cfg.drainTimeout)
	}
	t := time.NewTimer(w.cfg.drainTimeout)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	for _, a := range w.held() {
		a.cancel(ErrShutdown)
	}
	cut := time.NewTimer(cutOffWait)
	defer cut.Stop()
	select {
	case <-done:
		w.log.Warn("drain timeout passed; the steps still running were cancelled, and have ended")
		return
	case <-cut.C:
	}
	var settled sync.WaitGroup
	reported, dropped := 0, 0
	for _, a := range w.held() {
		settled.Add(1)
		l := a.lease
		log := w.log.With("run", l.Run, "step", l.Step, "attempt", l.Attempt)
		if a.finish() {
			// The body is still running, deaf to its context.
			if cairn.Delivery(l.Delivery) == cairn.AtMostOnce && !a.started.Load() {
				dropped++
				log.Warn("drain: an at_most_once attempt whose started was not acknowledged cannot be reported; its lease is left to expire")
				go func() {
					defer settled.Done()
					w.untrack(a)
				}()
				continue
			}
			reported++
			var patch map[string]json.RawMessage
			var usage Usage
			if sc := a.body.Load(); sc != nil {
				patch, usage = sc.ended()
			}
			go func() {
				defer settled.Done()
				defer w.untrack(a)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				w.sendFail(ctx, a, cairn.ClassInterrupted, w.interrupted()+"; its body did not return when cancelled", patch, usage, log)
			}()
			continue
		}
		// Its outcome is being reported: give that a few seconds.
		go func() {
			defer settled.Done()
			t := time.NewTimer(5 * time.Second)
			defer t.Stop()
			select {
			case <-a.settled:
			case <-t.C:
				stopPublishing()
			}
		}()
	}
	settled.Wait()
	stopPublishing()
	w.log.Warn("drain timeout passed; reported the steps still running as interrupted", "reported", reported, "dropped", dropped)
}

// held returns the attempts the worker holds.
func (w *Worker) held() []*attempt {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*attempt, 0, len(w.inflight))
	for _, a := range w.inflight {
		out = append(out, a)
	}
	return out
}

// backoff is an exponential backoff with full jitter.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
}

func (b *backoff) reset() { b.cur = 0 }

// sleep waits for the next backoff; false when ctx ended first.
func (b *backoff) sleep(ctx context.Context) bool {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return pause(ctx, b.cur/2+rand.N(b.cur/2+1)) // stream.go
}

// workerMetrics are the worker's OpenTelemetry instruments.
type workerMetrics struct {
	steps    metric.Int64Counter
	duration metric.Float64Histogram
	inflight metric.Int64UpDownCounter
}

func newWorkerMetrics(m metric.Meter) workerMetrics {
	var wm workerMetrics
	wm.steps, _ = m.Int64Counter("cairn.worker.steps", metric.WithDescription("Step attempts run, by outcome."))
	wm.duration, _ = m.Float64Histogram("cairn.worker.step.duration", metric.WithUnit("s"), metric.WithDescription("Body run time."))
	wm.inflight, _ = m.Int64UpDownCounter("cairn.worker.leases", metric.WithDescription("Leases held."))
	return wm
}

func (m workerMetrics) record(outcome string, d time.Duration) {
	attrs := metric.WithAttributes(attribute.String("outcome", outcome))
	m.steps.Add(context.Background(), 1, attrs)
	m.duration.Record(context.Background(), d.Seconds(), attrs)
}
