// Package engine is cairn's workflow engine: the state machines of runs,
// steps and leases, kept entirely in a blob.Bucket. An Engine holds no
// state that matters between calls: any number of engines (API function
// instances, the reaper) may work on one bucket at once, and any of them
// may die between two blob operations. Coordination is by conditional
// writes only: create-only to claim an attempt, compare-and-swap for every
// later change. See docs/ARCHITECTURE.md.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/audit"
	bulk "github.com/cairn-dev/cairn/engine/internal/batch"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/gate"
	"github.com/cairn-dev/cairn/engine/internal/handoff"
	"github.com/cairn-dev/cairn/engine/internal/hub"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/lease"
	"github.com/cairn-dev/cairn/engine/internal/mapstep"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/payload"
	"github.com/cairn-dev/cairn/engine/internal/progress"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/engine/internal/retention"
	"github.com/cairn-dev/cairn/engine/internal/runread"
	"github.com/cairn-dev/cairn/engine/internal/scan"
	"github.com/cairn-dev/cairn/engine/internal/schedule"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
	"github.com/cairn-dev/cairn/engine/internal/timer"
	"github.com/cairn-dev/cairn/engine/internal/wake"
	"github.com/cairn-dev/cairn/engine/internal/watch"
	"github.com/cairn-dev/cairn/engine/internal/workers"
	"github.com/cairn-dev/cairn/engine/kv"
	"github.com/cairn-dev/cairn/engine/resultcache"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/telemetry"

	"github.com/cairn-dev/cairn/engine/internal/flow"
)

// Defaults of the Config fields a deployment sets (internal/config reads
// them rather than restating them).
const (
	DefaultLeaseTTL         = 30 * time.Second
	DefaultMaxRequestTime   = 30 * time.Second
	DefaultFallbackInterval = 10 * time.Second
	// DefaultLatestTTL is how long an instance trusts the newest version
	// of a workflow it read (Config.LatestTTL).
	DefaultLatestTTL = 5 * time.Second
	// DefaultHeartbeatsPerTTL: HeartbeatInterval defaults to
	// LeaseTTL / DefaultHeartbeatsPerTTL.
	DefaultHeartbeatsPerTTL = 3
)

// Default limits of one render of an input template (package
// engine/internal/render).
const (
	DefaultExprCostLimit     = render.DefaultExprCostLimit
	DefaultTemplateCostLimit = render.DefaultTemplateCostLimit
	DefaultMaxRenderedBytes  = render.DefaultMaxRenderedBytes
)

// Config tunes an Engine. Zero fields take the defaults in brackets.
type Config struct {
	// Prefix is prepended to every key the engine writes [""].
	Prefix string
	// LeaseTTL is how long a lease lives without a heartbeat [30s].
	LeaseTTL time.Duration
	// HeartbeatInterval is how often workers are told to heartbeat
	// [LeaseTTL/3].
	HeartbeatInterval time.Duration
	// RecoveryWindow is how long an expired lease is left to its worker
	// before the reaper recovers the attempt [LeaseTTL/2].
	RecoveryWindow time.Duration
	// MaxRequestTime is the longest a request may take on the platform in
	// front of the engine; a claim holds at most 4/5 of it [30s].
	MaxRequestTime time.Duration
	// FallbackInterval is how often a waiting claim looks in the bucket
	// for work whose notification may have been lost [10s].
	FallbackInterval time.Duration
	// ClaimHold is the longest a claim is held open while nothing is
	// ready, never more than 4/5 of MaxRequestTime; negative: claims
	// answer at once. Short holds are for platforms where a held request
	// costs an execution environment (Lambda) [4/5 of MaxRequestTime].
	ClaimHold time.Duration
	// ClaimPause is what an empty claim's answer tells the worker to wait
	// before it claims again (pause_ms) [0: claim again at once].
	ClaimPause time.Duration
	// ActiveCheckInterval is how often the reaper visits a run that has
	// ready or leased steps [LeaseTTL].
	ActiveCheckInterval time.Duration
	// AnnounceAfter is how long a ready attempt may stay unclaimed before
	// the reaper announces it again [5s].
	AnnounceAfter time.Duration
	// PriorityAging is how long a ready step waits in an instance's hub to
	// gain one point of priority, which bounds starvation (priority.go)
	// [1s].
	PriorityAging time.Duration
	// UnservableAvoid is how long a worker that failed an attempt as
	// unservable is not offered that step again [30s].
	UnservableAvoid time.Duration
	// CommitTimeout bounds one group commit [20s].
	CommitTimeout time.Duration
	// MaxRunRecordBytes caps a run record [8 MiB].
	MaxRunRecordBytes int
	// MaxOutputBytes caps one payload: a run input, a step output, a
	// state value (and a whole state patch), an event payload [32 MiB;
	// 1 MiB when PayloadInlineMax is negative].
	MaxOutputBytes int
	// PayloadInlineMax is the largest value kept in the run record; a
	// larger one is stored as its own object, payloads/<run>/<sha256>,
	// and referenced (engine/payloads.go) [64 KiB]. Negative keeps every
	// value inline (the run record's limit then bounds them all).
	PayloadInlineMax int
	// ViewResolveBytes caps the payloads one GET /runs/{run} resolves;
	// the rest are answered as references [4 MiB].
	ViewResolveBytes int
	// RenderResolveBytes caps the payloads one template render resolves
	// [32 MiB].
	RenderResolveBytes int
	// PayloadCacheBytes bounds the instance's cache of payloads it wrote
	// or read (immutable objects) [32 MiB]; negative disables it.
	PayloadCacheBytes int
	// MaxPendingEvents caps events recorded for a run that no wait has
	// consumed yet [100].
	MaxPendingEvents int
	// Retention is how long an ended run (record, leases, idempotency
	// key, timers), and a fired event window with its ids' markers, is
	// kept before the reaper deletes it [30 days]; negative keeps them
	// forever.
	Retention time.Duration
	// RetentionBatch caps the runs one reaper pass deletes [100].
	RetentionBatch int
	// Prices is the price book for usage [none].
	Prices cairn.PriceBook
	// ProgressRate is how many progress messages a second one lease may
	// send (with a burst of 20) [50].
	ProgressRate float64
	// Bus carries hints between instances [in-process only].
	Bus notify.Bus
	// Logger [slog.Default()].
	Logger *slog.Logger
	// Telemetry records spans and metrics [nil: none].
	Telemetry *telemetry.T
	// Now is the clock [time.Now].
	Now func() time.Time
	// KeyLayout is the key layout the engine writes: KeyLayoutFlat, or
	// KeyLayoutSharded to spread runs, leases, timers and audit records
	// over 16 key prefixes for stores that partition by key range (S3,
	// GCS) at high request rates. Either reads both (layout.go) [flat].
	KeyLayout string
	// LatestTTL is how long an instance trusts the newest version of a
	// workflow it read (workflows/<name>/@latest, one object read by every
	// start that names no version): a start on another instance may run
	// the previous version for up to this long after a registration
	// (registrations announce themselves on fan-out buses, which shortens
	// it; a registration through this instance is seen at once). Wall
	// clock. Negative reads the object on every start [5s].
	LatestTTL time.Duration
	// ShedAbove is the share of this instance's writes, over the last 30
	// s, that the store may refuse for rate before StartRun refuses a
	// share of new runs (503, nothing written) so the runs already going
	// get the capacity (admission.go); negative never sheds [0.1].
	ShedAbove float64
	// ObjectWritesPerSecond is the store's limit of writes to one object
	// (GCS: about 1 a second). The committer then spaces its writes of a
	// run record by 1/this (wall clock) instead of writing, being refused
	// (429) and retrying every 100–200 ms; completes that arrive meanwhile
	// join the batch, or are deferred (deferred.go) as after a refusal.
	// 0: no spacing [0; cairn serve sets 1 for gs:// buckets].
	ObjectWritesPerSecond float64
	// ReplaceDefinitions lets a worker's changed definition of a version
	// replace the stored one; runs in flight keep theirs (cairn dev) [off:
	// definitions are immutable, a change is refused].
	ReplaceDefinitions bool
}

func (c *Config) setDefaults() {
	positive(&c.LeaseTTL, DefaultLeaseTTL)
	positive(&c.HeartbeatInterval, c.LeaseTTL/DefaultHeartbeatsPerTTL)
	positive(&c.RecoveryWindow, c.LeaseTTL/2)
	positive(&c.MaxRequestTime, DefaultMaxRequestTime)
	positive(&c.FallbackInterval, DefaultFallbackInterval)
	positive(&c.ActiveCheckInterval, c.LeaseTTL)
	positive(&c.AnnounceAfter, 5*time.Second)
	positive(&c.PriorityAging, time.Second)
	positive(&c.UnservableAvoid, 30*time.Second)
	positive(&c.CommitTimeout, 20*time.Second)
	positive(&c.RetentionBatch, DefaultRetentionBatch)
	positive(&c.MaxRunRecordBytes, 8<<20)
	positive(&c.ViewResolveBytes, DefaultViewResolveBytes)
	positive(&c.RenderResolveBytes, DefaultRenderResolveBytes)
	positive(&c.MaxPendingEvents, 100)
	// Zero takes the default; a negative value means what its field says.
	c.ShedAbove = cmp.Or(c.ShedAbove, DefaultShedAbove)
	c.LatestTTL = cmp.Or(c.LatestTTL, DefaultLatestTTL)
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.PayloadInlineMax = cmp.Or(c.PayloadInlineMax, DefaultPayloadInlineMax)
	c.PayloadCacheBytes = cmp.Or(c.PayloadCacheBytes, 32<<20)
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxPayloadBytes
		if c.PayloadInlineMax < 0 {
			c.MaxOutputBytes = 1 << 20 // everything inline: the old bound
		}
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Now == nil {
		c.Now = time.Now
	}
}

// positive sets *p to v unless it is positive.
func positive[T int | time.Duration](p *T, v T) {
	if *p <= 0 {
		*p = v
	}
}

// Engine runs workflows on a bucket.
type Engine struct {
	store *blob.Bucket
	cfg   Config
	keys  keys.Layout
	log   *slog.Logger

	commits   *committer
	leases    *lease.Objects // lease objects' writes and this instance's cache of them (engine/internal/lease)
	hub       *hub.Hub
	handoff   handoff.Set[heldClaim, inlineGrant] // held claims a start may hand its first attempts to (inline.go)
	handedOff atomic.Int64                        // leases handed to held claims by starts (a test signal)
	progress  *progress.Hub                       // progress streams (progress.go)
	watch     *watch.Registry[runRecord]
	defs      *defCache
	workers   *workers.Registry

	outage     throttle.Outage
	background background // bookkeeping goroutines (worker sightings); see Settle

	rotation scan.Rotation  // where this instance's fallback scans are (claim.go)
	fallback *scan.Fallback // the claims' fallback scan (claim.go)

	scan scan.Lister                // ordered listings over both key layouts (engine/internal/scan)
	flow *flow.Table                // flow control: concurrency slots, rate limits, parked hints (limits.go)
	runs *runread.Reader[runRecord] // every read of a run record (runstore.go, engine/internal/runread)
	// startRetry bounds the retries starts make themselves (runs.go).
	startRetry throttle.Budget
	// admit sheds starts while the store refuses writes (admission.go).
	admit *admission

	draining  chan struct{}
	drainOnce sync.Once

	own    wake.Set    // the due times of the run timers this instance wrote (ownwake.go)
	timers timer.Index // writes and drops timer objects (engine/internal/timer)
	starts *timer.Starts

	purger *retention.Purger // deletes ended runs (retention.go)
	audit  *audit.Log        // the audit log of run reads (engine/internal/audit)

	stopBus func()

	// schedules and batches are engine/internal/schedule and batch
	// (schedules.go, batches.go).
	schedules *schedule.Schedules
	batches   *bulk.Batches
	gates     *gate.Gates // debounce and batch windows (events.go)

	// payloads caches payload objects (immutable, by content hash).
	payloads *payload.Store
	kv       *kv.Store
	results  *resultcache.Cache
	items    *mapstep.Items // map steps' items objects, decoded (mapstep.go)
	// flows runs the work a commit asks of its instance (collect a map,
	// start a child, apply a child's end): not waited for by Settle,
	// whose lock such work would need.
	flows background
}

// New returns an engine on store. Close it to stop its notification
// subscription.
func New(store *blob.Bucket, cfg Config) (*Engine, error) {
	cfg.setDefaults()
	if cfg.HeartbeatInterval >= cfg.LeaseTTL {
		return nil, fmt.Errorf("engine: heartbeat interval %v must be shorter than the lease TTL %v", cfg.HeartbeatInterval, cfg.LeaseTTL)
	}
	if err := checkKeyLayout(cfg.KeyLayout); err != nil {
		return nil, err
	}
	e := &Engine{store: store, cfg: cfg, keys: keys.Layout{Prefix: cfg.Prefix, Sharded: cfg.KeyLayout == KeyLayoutSharded}, log: cfg.Logger, draining: make(chan struct{})}
	e.rotation.Start = rand.IntN
	e.commits = newCommitter(e)
	e.runs = runread.New(store, e.keys, e.commits.Cache(), func(r *runRecord) int64 { return r.Rev }, cfg.CommitTimeout)
	e.admit = newAdmission(cfg.ShedAbove)
	e.leases = lease.New(store, e.keys, 4096, e.admit.Saw)
	e.hub = hub.New(cfg.Now, cfg.PriorityAging, func(n int) { cfg.Telemetry.Dropped("hint", "evicted", n) }) // see telemetry.go
	e.watch = watch.New[runRecord]()
	e.progress = progress.New(e.now, cfg.ProgressRate, 0)
	e.defs = e.newCatalog()
	e.items = mapstep.NewItems(store)
	e.workers = workers.New(store, e.keys, e.now, e.log, &e.background, e.MaxClaimHold()+e.ClaimPause())
	e.scan = scan.Lister{Bucket: store, Keys: e.keys}
	e.timers = timer.Index{Bucket: store, Keys: e.keys, OrphanGrace: 2 * cfg.MaxRequestTime}
	e.starts = timer.NewStarts(e.timers) // new runs' first timers, shared by concurrent starts
	e.schedules, e.batches, e.gates = newSchedules(e), newBatches(e), newGates(e)
	e.flow = flow.NewTable(store, e.keys, e.now, e.holderStale)
	e.fallback = newFallback(e)
	e.payloads = payload.New(store, e.keys, cfg.PayloadInlineMax, cfg.PayloadCacheBytes)
	e.kv = kv.New(store, cfg.Prefix, min(cfg.MaxOutputBytes, kv.MaxValue), e.now)
	e.results, e.audit = resultcache.New(store, cfg.Prefix, cfg.PayloadInlineMax, e.now), audit.New(store, e.keys, cfg.CommitTimeout)
	e.purger = newPurger(e)
	e.outage = throttle.Outage{Log: e.log, Now: e.now}
	if cfg.Bus != nil {
		stop, err := cfg.Bus.Subscribe(e.receive)
		if err != nil {
			return nil, fmt.Errorf("engine: subscribe to notifications: %w", err)
		}
		e.stopBus = stop
	}
	return e, nil
}

// Close stops the engine's notification subscription.
func (e *Engine) Close() error {
	if e.stopBus != nil {
		e.stopBus()
	}
	e.background.Close()
	e.flows.Close()
	return nil
}

// Config returns the engine's effective configuration.
func (e *Engine) Config() Config { return e.cfg }

// Store returns the bucket the engine works on.
func (e *Engine) Store() *blob.Bucket { return e.store }

// KV is the long-term store kept in the engine's bucket.
func (e *Engine) KV() *kv.Store { return e.kv }

// Results is the steps' result cache kept in the engine's bucket.
func (e *Engine) Results() *resultcache.Cache { return e.results }

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// MaxClaimHold is the longest a claim may be held: 4/5 of the maximum
// request time.
func (e *Engine) MaxClaimHold() time.Duration { return e.cfg.MaxRequestTime * 4 / 5 }

// ClaimHold is the longest a claim is held open: Config.ClaimHold, within
// MaxClaimHold.
func (e *Engine) ClaimHold() time.Duration {
	switch h := e.cfg.ClaimHold; {
	case h < 0:
		return 0
	case h == 0:
		return e.MaxClaimHold()
	default:
		return min(h, e.MaxClaimHold())
	}
}

// ClaimPause is how long a worker is asked to wait after an empty claim
// before the next one (Config.ClaimPause; 0: at once).
func (e *Engine) ClaimPause() time.Duration { return max(e.cfg.ClaimPause, 0) }

// afterCommit carries out a committed write's effects: it wakes this
// instance's status requests waiting on the run, and publishes the hints
// of work that became ready together with a run-change notice for the
// other instances' waiting requests (one Publish, so a commit that makes
// work ready sends no extra message).
func (e *Engine) afterCommit(fx *effects) {
	e.observe(fx)
	for _, f := range fx.after {
		f()
	}
	e.runLinksAfterCommit(fx) // child.go
	hints := fx.hints
	if fx.rev > 0 {
		e.watch.Changed(fx.run.ID, fx.rev)
		if e.cfg.Bus != nil {
			// No workflow or version: an instance that predates change
			// notices decodes one as a hint for no workflow it serves,
			// and no claim of its takes it.
			hints = append(hints, notify.ChangeNotice(fx.run.ID, fx.rev))
		}
	}
	if len(hints) > 0 {
		e.announce(hints)
	}
}

// announce publishes hints: on the bus when there is one, else to this
// instance's hub (hub.Announce).
func (e *Engine) announce(hints []notify.Hint) { hub.Announce(e.cfg.Bus, hints, e.receive, e.log) }

// nextWake is when the reaper should next look at a run (an ended one:
// when its retention passes, see retention.go), or the
// zero time when it need not: the run's deadline, and the wake-up of each
// started step, as its kind says (stepKinds: retry backoffs and routine
// lease checks of ready tasks, sleep ends, wait timeouts). A run that
// only waits for events without a timeout needs no timer and costs
// nothing at rest.
func (e *Engine) nextWake(r *runRecord, now time.Time) time.Time {
	if r.Status.Terminal() {
		due := e.retentionDue(r) // see retention.go
		if !due.IsZero() && due.Before(now) {
			due = now
		}
		return due
	}
	if r.Status == cairn.RunPaused {
		return time.Time{} // visited for its leases only (pause.go)
	}
	var due time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	if r.Deadline != nil {
		consider(*r.Deadline)
	}
	for _, st := range r.Steps {
		if k := activeKinds[st.Status]; k != nil {
			consider(k.wake(e, st, now))
		}
	}
	if !due.IsZero() && due.Before(now) {
		due = now
	}
	return due
}

// needsNewTimer reports whether a commit must arm a timer for r: the run
// has a next wake-up the newest armed timer (TimerAt) does not cover
// (engine/internal/timer).
func (e *Engine) needsNewTimer(r *runRecord, now time.Time) bool {
	due := e.nextWake(r, now)
	return !due.IsZero() && !timer.Covered(r.TimerAt, due, now)
}

// armTimer writes the run's next wake-up, records it in r.TimerAt, and
// returns its key ("" when the run needs none).
func (e *Engine) armTimer(ctx context.Context, r *runRecord, now time.Time) (string, error) {
	due := e.nextWake(r, now)
	if due.IsZero() {
		return "", nil
	}
	return e.armTimerAt(ctx, r, due, now)
}

// armTimerAt writes the run's wake-up at due (see armTimer).
func (e *Engine) armTimerAt(ctx context.Context, r *runRecord, due, now time.Time) (string, error) {
	at := timer.Due(due, now)
	key, err := e.starts.Put(ctx, timerName(r), at, r.Rev == 1 && r.TimerAt == nil && !r.Status.Terminal()) // shared: a start's (createRun)
	if err != nil {
		return "", err
	}
	if !r.Status.Terminal() {
		e.ownWake(r.ID, due)
	}
	r.TimerAt = &at
	return key, nil
}

// armAt writes a timer for run at due (an attempt's timeout), unless the
// run's armed timer fires earlier anyway.
func (e *Engine) armAt(ctx context.Context, r *runRecord, due, now time.Time) error {
	e.ownWake(r.ID, due)
	if timer.Covered(r.TimerAt, due, now) {
		return nil
	}
	_, err := e.timers.Put(ctx, r.ID, timer.Due(due, now))
	return err
}

// readJSON reads and decodes an object (engine/internal/object).
func readJSON[T any](ctx context.Context, b *blob.Bucket, key string) (*T, blob.Version, error) {
	return object.Read[T](ctx, b, key)
}

// errCorrupt marks a stored object that does not decode: reading it again
// does not help.
var errCorrupt = errs.ErrCorrupt

func isNotFound(err error) bool { return errors.Is(err, blob.ErrNotFound) }

// Ready reports whether the bucket answers: one read of an object that
// need not exist (not found is an answer).
func (e *Engine) Ready(ctx context.Context) error {
	_, err := e.store.Stat(ctx, e.keys.Prefix+"readyz")
	if err == nil || isNotFound(err) {
		return nil
	}
	return err
}
