package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
	"github.com/cairn-dev/cairn/notify"
)

// A mutationOf[T] changes a run record and answers T, or refuses to and
// says why: the one form of every change to a run record (starts,
// worker calls, the reaper, events, cancels, maps and children). It must
// be a pure function of the record (and the time it is given): when a
// compare-and-swap loses, the committer runs it again on the fresh
// record. A mutation that returns an error must leave the record
// unchanged. Mutations are submitted through mutate, which types their
// answers.
type mutationOf[T any] func(r *runRecord, fx *effects) (T, error)

// mutation is the committer's untyped form of a mutationOf[T].
type mutation = mutationOf[any]

// effects are what a committed write asks for after it lands: hints to
// publish for work that became ready, and (set by the committer once the
// write landed) the run and its new revision, for the status requests
// waiting on it.
type effects struct {
	now   time.Time
	hints []notify.Hint
	run   *runRecord
	rev   int64
	// journalFrom is the length of the run's journal before the
	// batch: the entries after it are the batch's (see observe).
	journalFrom int
	// writes are objects the new record refers to, written before its
	// swap (map items and output shards: mapstep.go).
	writes []preWrite
	// after runs once the write landed, before anyone is answered: work
	// the commit asks this instance to start (collecting a map).
	after []func()
}

// committer applies mutations to run records with group commit: the
// mutations that arrive for one run while a write to it is in flight are
// applied together, in arrival order, by one compare-and-swap. Under a
// store that takes ~1 write per second per object (GCS), 200 completions
// of a fan-out land in a handful of writes instead of 200 contending ones.
//
// It keeps the last record it wrote or read per run, with its version, so
// the next batch can try its swap without reading first; a stale copy
// costs one failed swap and a read. The cache is a hint, not state: any
// instance may write any run.
type committer struct {
	e *Engine

	mu      sync.Mutex
	batches map[string]*batch

	cache *recordCache
	// leases is the instance's lease cache (leasecache.go).
	leases *recordCache
	// throttledAt is when a write of a run's record was last throttled
	// (deferred.go), under mu.
	throttledAt map[string]time.Time
	// wroteAt is when this instance last wrote a run's record (wall
	// clock), for Config.ObjectWritesPerSecond, under mu.
	wroteAt map[string]time.Time
}

type batch struct {
	items []*pending
}

type pending struct {
	ctx  context.Context
	m    mutation
	done chan result
}

type result struct {
	val any
	err error
}

func newCommitter(e *Engine) *committer {
	return &committer{e: e, batches: map[string]*batch{}, cache: newRecordCache(4096), leases: newRecordCache(4096)}
}

// mutate runs m on the run's record and commits it, together with
// whatever else is queued for the run, and returns m's value or its error
// (or the commit's error). When there is nothing to write (m changed
// nothing) no write is made. m must be a pure function of the record:
// see mutation. It is the only way to change a run record.
func mutate[T any](ctx context.Context, c *committer, run string, m mutationOf[T]) (T, error) {
	val, err := c.submit(ctx, run, func(r *runRecord, fx *effects) (any, error) { return m(r, fx) })
	t, _ := val.(T) // the zero T when m did not answer (an error, a panic)
	return t, err
}

// submit queues m for the run and waits for its answer. The committer
// carries answers untyped; mutate types them.
func (c *committer) submit(ctx context.Context, run string, m mutation) (any, error) {
	p := &pending{ctx: ctx, m: m, done: make(chan result, 1)}
	c.mu.Lock()
	b, busy := c.batches[run]
	if busy {
		b.items = append(b.items, p)
		c.mu.Unlock()
	} else {
		c.batches[run] = &batch{items: []*pending{p}}
		c.mu.Unlock()
		go c.lead(run)
	}
	select {
	case r := <-p.done:
		return r.val, r.err
	case <-ctx.Done():
		// The batch may still commit this mutation; the caller's retry
		// will find it applied (already_applied) or not.
		return nil, ctx.Err()
	}
}

// lead commits batches for run until none is queued.
func (c *committer) lead(run string) {
	for {
		c.mu.Lock()
		b := c.batches[run]
		if len(b.items) == 0 {
			delete(c.batches, run)
			c.idleLocked(run)
			c.mu.Unlock()
			return
		}
		items := b.items
		b.items = nil
		c.mu.Unlock()
		c.commitSafe(run, items)
	}
}

// commitSafe is commit that survives a panic outside the mutations (a bug
// in the committer itself): the batch is answered with an internal error
// and the leader goes on with the next batch.
func (c *committer) commitSafe(run string, items []*pending) {
	defer func() {
		if p := recover(); p != nil {
			c.e.log.Error("the committer panicked; the batch fails, the process goes on", "run", run, "panic", p, "stack", string(debug.Stack()))
			c.cache.drop(run)
			for _, it := range items {
				select {
				case it.done <- result{err: &InternalError{Message: "internal error while committing to run " + run}}:
				default:
				}
			}
		}
	}()
	c.commit(run, items)
}

// commit applies one batch with retries on lost swaps.
func (c *committer) commit(run string, items []*pending) {
	e := c.e
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.CommitTimeout)
	defer cancel()
	useCache := true
	paced := false // at most one wait per batch
	for attempt := 0; ; attempt++ {
		raw, ver, fromCache, err := c.base(ctx, run, useCache)
		if err != nil {
			c.finish(items, nil, nil, err, nil)
			return
		}
		fx := &effects{now: e.now()}
		rec, vals, errs, err := c.decide(ctx, run, raw, items, fx)
		if err != nil {
			c.finish(items, nil, nil, err, nil)
			return
		}
		data := mustJSON(rec)
		// Records are always written by mustJSON, whose encoding is
		// deterministic: unchanged bytes mean nothing to write.
		if bytes.Equal(data, raw) {
			if fromCache {
				// Refusals and no-ops decided on a cached copy are only
				// trusted from a fresh read: the copy may be stale.
				useCache = false
				continue
			}
			c.finish(items, vals, errs, nil, fx) // nothing to write
			return
		}
		if !paced && c.pace(ctx, run) {
			// Waited out the store's per-object period: take what queued
			// meanwhile (decided again on the cached copy).
			paced = true
			items = c.takeQueued(run, items)
			continue
		}
		data, nv, err := c.write(ctx, rec, ver, fx)
		var before *writeBeforeError
		if errors.As(err, &before) {
			c.finish(items, vals, errs, unavailable(before.err), nil)
			return
		}
		switch {
		case err == nil:
			c.cache.put(run, data, nv)
			c.wrote(run)
			fx.run, fx.rev = rec, rec.Rev
			for i := range fx.hints {
				// The revision that made the work ready: a claim on an
				// instance whose cached copy is at least this new decides
				// the hint without reading the run (claimRun).
				fx.hints[i].Rev = rec.Rev
			}
			e.cfg.Telemetry.Committed(len(items), attempt)
			c.finish(items, vals, errs, nil, fx)
			return
		case errors.Is(err, blob.ErrPreconditionFailed), errors.Is(err, blob.ErrNotFound):
			// Lost the race: read the winner's record and decide again.
			c.cache.drop(run)
			useCache = false
		case blob.IsRetryable(err) && attempt < 20 && errors.Is(err, blob.ErrThrottled):
			// Refused, nothing written: the cached copy and its version
			// are still the ones to swap against (a write elsewhere
			// meanwhile fails the swap and makes the read). Completes of
			// this run are deferred meanwhile (deferred.go). The object
			// takes about a write a second: retrying at once only spends
			// requests. What queued meanwhile rides in this batch instead
			// of waiting for the next.
			c.throttled(run)
			sleepThrottled(ctx)
			items = c.takeQueued(run, items)
		case blob.IsRetryable(err) && attempt < 20:
			c.cache.drop(run)
			useCache = false
			sleepJitter(ctx, attempt)
		default:
			c.finish(items, vals, errs, unavailable(err), nil)
			return
		}
		if attempt >= 50 {
			c.finish(items, vals, errs, unavailable(fmt.Errorf("run %s: gave up after %d conflicting writes", run, attempt)), nil)
			return
		}
	}
}

// pace waits out the store's per-object period when the record was
// written less than that ago (rather than be refused), and reports
// whether it waited. Completes of the run are deferred meanwhile, as
// after a refusal.
func (c *committer) pace(ctx context.Context, run string) bool {
	wait := c.paceWait(run)
	if wait <= 0 {
		return false
	}
	c.throttled(run)
	sleepCtx(ctx, wait)
	return true
}

// base is the record a batch is decided on, with its version: the
// cached copy when useCache and the cache has one (fromCache), else read
// from the bucket (in either layout) and cached.
func (c *committer) base(ctx context.Context, run string, useCache bool) (raw []byte, ver blob.Version, fromCache bool, err error) {
	if cached, v, ok := c.cache.get(run); ok && useCache {
		return cached, v, true, nil
	}
	e := c.e
	o, err := getEither(ctx, e.store, e.keys.Run(run), e.keys.OtherRun(run))
	if err != nil {
		if errors.Is(err, blob.ErrNotFound) {
			err = &NotFoundError{What: "run", ID: run}
		}
		return nil, "", false, err
	}
	c.cache.put(run, o.Data, o.Version)
	return o.Data, o.Version, false, nil
}

// decide applies a batch's mutations to raw (applyAll), and starts the
// steps of a compensation a failure started (endRun has no definition:
// compensate.go).
func (c *committer) decide(ctx context.Context, run string, raw []byte, items []*pending, fx *effects) (*runRecord, []any, []error, error) {
	rec, vals, errs, err := c.applyAll(run, raw, items, fx)
	if err != nil || !rec.compensating() {
		return rec, vals, errs, err
	}
	d, err := c.e.definition(ctx, rec.Workflow, rec.Version)
	if err != nil {
		return nil, nil, nil, err
	}
	c.e.advance(rec, d, fx)
	return rec, vals, errs, nil
}

// writeBeforeError is a failure of a write the record's swap needs first
// (its timer, the objects it refers to): nothing was swapped.
type writeBeforeError struct{ err error }

func (e *writeBeforeError) Error() string { return e.err.Error() }

// write swaps rec, at its next revision, over version ver: the run's next
// wake-up gets its timer before the write that needs it (a timer without
// need is harmless, a need without a timer would leave a sleep, timeout,
// backoff or deadline to fire late; see armTimer for when a commit arms
// one), and the objects the record refers to are written before it. It
// returns the bytes written and their version, the swap's error, or a
// writeBeforeError.
func (c *committer) write(ctx context.Context, rec *runRecord, ver blob.Version, fx *effects) ([]byte, blob.Version, error) {
	e := c.e
	rec.Rev++
	rec.UpdatedAt = fx.now
	if e.needsNewTimer(rec, fx.now) {
		if _, err := e.armTimer(ctx, rec, fx.now); err != nil {
			return nil, "", &writeBeforeError{err}
		}
	}
	if err := e.preWrites(ctx, fx.writes); err != nil {
		return nil, "", &writeBeforeError{err}
	}
	data := mustJSON(rec)
	nv, err := e.store.Swap(ctx, e.keys.RunOf(rec.Layout, rec.ID), data, ver)
	e.admit.wrote(fx.now, err)
	return data, nv, err
}

// applyAll runs a batch's mutations on a fresh decode of raw, in order.
// A mutation that panics is answered with an internal error and the batch
// is applied again without it (its half-done changes must not be
// written); a mutation whose changes would grow the record past
// MaxRunRecordBytes is refused with too_large and the rest applied
// without it. Neither stops the committer or the process.
func (c *committer) applyAll(run string, raw []byte, items []*pending, fx *effects) (*runRecord, []any, []error, error) {
	max := c.e.cfg.MaxRunRecordBytes
	excluded := make([]error, len(items))
	for {
		var rec runRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, nil, nil, fmt.Errorf("run %s: stored record is corrupt: %w", run, err)
		}
		fx.hints = fx.hints[:0]
		fx.writes, fx.after = fx.writes[:0], fx.after[:0]
		fx.journalFrom = len(rec.Journal)
		vals := make([]any, len(items))
		errs := make([]error, len(items))
		size := len(raw)
		redo := false
		for i, p := range items {
			if excluded[i] != nil {
				errs[i] = excluded[i]
				continue
			}
			if err := p.ctx.Err(); err != nil {
				errs[i] = err
				continue
			}
			var perr error
			vals[i], errs[i], perr = c.safeApply(p.m, &rec, fx)
			if perr != nil {
				excluded[i], redo = perr, true
				break
			}
			if errs[i] == nil && size+(64<<10) > max {
				// Near the limit: measure after each change (rare; records
				// are far below it normally).
				if n := len(mustJSON(&rec)); n > max {
					excluded[i], redo = reject(cairn.ReasonTooLarge,
						"run %s: this change would grow the run record to %d bytes, over its %d-byte limit (max_run_record_bytes); outputs, state or events are too large", run, n, max), true
					break
				} else {
					size = n
				}
			}
		}
		if !redo {
			return &rec, vals, errs, nil
		}
	}
}

// safeApply runs one mutation, turning a panic into an error.
func (c *committer) safeApply(m mutation, r *runRecord, fx *effects) (val any, err error, panicked error) {
	defer func() {
		if p := recover(); p != nil {
			c.e.log.Error("a run mutation panicked; the request fails, the process goes on", "run", r.ID, "panic", p, "stack", string(debug.Stack()))
			panicked = &InternalError{Message: fmt.Sprintf("internal error while applying the change to run %s", r.ID)}
		}
	}()
	val, err = m(r, fx)
	return val, err, nil
}

// finish answers every item of a batch: its own value and error, or
// failed (a store error) when the batch could not be written. The effects
// of a written batch are carried out once, before anyone is answered, so
// a worker that hears "completed" can already claim what became ready.
func (c *committer) finish(items []*pending, vals []any, errs []error, failed error, fx *effects) {
	if failed == nil && fx != nil {
		c.e.afterCommit(fx)
	}
	for i, p := range items {
		r := result{}
		if vals != nil {
			r.val, r.err = vals[i], errs[i]
		}
		if failed != nil && r.err == nil {
			r.err = failed
		}
		p.done <- r
	}
}

// sleepThrottled waits 100–200 ms before a throttled write is retried.
func sleepThrottled(ctx context.Context) {
	t := time.NewTimer(time.Duration(100+rand.IntN(100)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// wrote notes that this instance wrote run's record now (for the
// per-object spacing; nothing when the store has no per-object limit).
func (c *committer) wrote(run string) {
	if c.e.cfg.ObjectWritesPerSecond <= 0 {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wroteAt == nil {
		c.wroteAt = map[string]time.Time{}
	}
	if len(c.wroteAt) >= 10_000 {
		period := c.period()
		for k, t := range c.wroteAt {
			if now.Sub(t) >= period {
				delete(c.wroteAt, k)
			}
		}
	}
	c.wroteAt[run] = now
}

// period is the per-object write period (0: none).
func (c *committer) period() time.Duration {
	if r := c.e.cfg.ObjectWritesPerSecond; r > 0 {
		return time.Duration(float64(time.Second) / r)
	}
	return 0
}

// paceWait is how long to wait before writing run's record again.
func (c *committer) paceWait(run string) time.Duration {
	period := c.period()
	if period == 0 {
		return 0
	}
	c.mu.Lock()
	t, ok := c.wroteAt[run]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	return period - time.Since(t)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// takeQueued moves the mutations queued for run since its batch was taken
// into items (the leader's batch, being retried).
func (c *committer) takeQueued(run string, items []*pending) []*pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.batches[run]; b != nil && len(b.items) > 0 {
		items = append(items, b.items...)
		b.items = nil
	}
	return items
}

func sleepJitter(ctx context.Context, attempt int) { throttle.Jitter(ctx, attempt) }

// recordCache is a bounded LRU of run records by id.
type recordCache struct {
	lru *cache.Cache[string, *cacheEntry]
}

type cacheEntry struct {
	data []byte
	ver  blob.Version

	// decoded is data decoded once, shared read-only by every claim that
	// decides on this copy (sharedRun): a fan-out's claims would
	// otherwise each decode the whole record, which grows with the
	// width, so a W-wide fan-out cost O(W²). An entry is never changed
	// after put; a new write puts a new entry.
	once    sync.Once
	decoded atomic.Pointer[runRecord]
}

func newRecordCache(max int) *recordCache {
	return &recordCache{lru: cache.New[string, *cacheEntry](max)}
}

func (c *recordCache) get(run string) ([]byte, blob.Version, bool) {
	if e, ok := c.lru.Get(run); ok {
		return e.data, e.ver, true
	}
	return nil, "", false
}

// shared returns the cached record of run decoded, decoding it once per
// cached version. The record is shared by every caller and must not be
// changed (nor any map, slice or pointer in it).
func (c *recordCache) shared(run string) (*runRecord, bool) {
	e, ok := c.lru.Get(run)
	if !ok {
		return nil, false
	}
	e.once.Do(func() {
		var r runRecord
		if json.Unmarshal(e.data, &r) == nil {
			e.decoded.Store(&r)
		}
	})
	r := e.decoded.Load()
	return r, r != nil
}

// offer caches rec (data decoded, read at ver) unless the cached copy is
// known to be at least as new. rec becomes the entry's shared decoded
// copy: it must not be changed.
func (c *recordCache) offer(run string, data []byte, ver blob.Version, rec *runRecord) {
	ent := &cacheEntry{data: data, ver: ver}
	ent.decoded.Store(rec)
	ent.once.Do(func() {}) // decoded already
	c.lru.Offer(run, ent, func(cur *cacheEntry) bool {
		return cur.ver == ver || cur.known() != nil && cur.known().Rev >= rec.Rev
	})
}

// known is the entry's decoded copy when it was decoded already, else nil
// (without decoding it).
func (e *cacheEntry) known() *runRecord { return e.decoded.Load() }

func (c *recordCache) put(run string, data []byte, ver blob.Version) {
	c.lru.Put(run, &cacheEntry{data: data, ver: ver})
}

func (c *recordCache) drop(run string) { c.lru.Delete(run) }
