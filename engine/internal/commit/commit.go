// Package commit is the engine's group commit: the one guarded write of
// a record that many requests change at once (a run record). Mutations
// that arrive for one record while a write to it is in flight are applied
// together, in arrival order, by one compare-and-swap. Under a store that
// takes ~1 write per second per object (GCS), 200 completions of a
// fan-out land in a handful of writes instead of 200 contending ones.
//
// The package owns the queue, the retry loop (lost swaps, refusals for
// rate, the store's per-object pace), the panic and size guards and the
// instance's cache of records; what a record is, how a batch is finished
// and written, and what a landed write sets off are the Host's (the
// engine's state machine). Anchor: River's internal/jobcompleter.
package commit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// A Mutation changes a record and answers a value, or refuses to and says
// why. It must be a pure function of the record (and of the effects'
// time): when a compare-and-swap loses, the committer runs it again on
// the fresh record. A mutation that returns an error must leave the
// record unchanged.
type Mutation[R, FX any] func(r *R, fx *FX) (any, error)

// Host is what a committer needs from the record's owner.
type Host[R, FX any] struct {
	// Read reads a record from the bucket (a fresh read); a missing one is
	// an errs.NotFoundError.
	Read func(ctx context.Context, id string) (*blob.Object, error)
	// Begin returns the effects of a batch decided now; Reset clears
	// them before a batch is applied (again) on r, fresh from the store.
	Begin func() *FX
	Reset func(fx *FX, r *R)
	// Decide finishes a batch's decision after its mutations ran (the
	// steps a compensation starts). It may be nil.
	Decide func(ctx context.Context, r *R, fx *FX) error
	// Write swaps r over version ver, with whatever must be written
	// before it (a *BeforeError when that failed: nothing was swapped),
	// and returns the bytes written and their version.
	Write func(ctx context.Context, r *R, ver blob.Version, fx *FX) ([]byte, blob.Version, error)
	// Landed is told of a batch whose write landed, before anyone is
	// answered (items mutations, after attempt lost swaps).
	Landed func(r *R, fx *FX, items, attempt int)
	// After carries out a committed batch's effects, before anyone is
	// answered.
	After func(fx *FX)
	// Rev is a record's revision (for the cache: a newer copy is kept).
	Rev func(r *R) int64

	// Timeout bounds one batch's commit, its retries included.
	Timeout time.Duration
	// MaxBytes is a record's largest encoding: a mutation that would grow
	// it past that is refused with too_large.
	MaxBytes int
	// WritesPerSecond is the store's per-object write rate (0: none): the
	// committer spaces its writes of one record by its period.
	WritesPerSecond float64
	Log             *slog.Logger
}

// BeforeError is a failure of a write a record's swap needs first: nothing
// was swapped.
type BeforeError struct{ Err error }

func (e *BeforeError) Error() string { return e.Err.Error() }
func (e *BeforeError) Unwrap() error { return e.Err }

// CongestedFor is how long after a throttled write of a record the
// record counts as congested (see Congested).
const CongestedFor = 2 * time.Second

// Committer applies mutations to records with group commit. It keeps the
// last copy it wrote or read of each record, with its version, so the
// next batch can try its swap without reading first; a stale copy costs
// one failed swap and a read. The cache is a hint, not state: any
// instance may write any record.
type Committer[R, FX any] struct {
	h Host[R, FX]

	mu      sync.Mutex
	batches map[string]*batch[R, FX]
	// throttledAt is when a write of a record was last throttled;
	// wroteAt when this instance last wrote it (for WritesPerSecond).
	throttledAt map[string]time.Time
	wroteAt     map[string]time.Time

	cache *Cache[R]
}

type batch[R, FX any] struct{ items []*pending[R, FX] }

type pending[R, FX any] struct {
	ctx  context.Context
	m    Mutation[R, FX]
	done chan result
}

type result struct {
	val any
	err error
}

// New returns a committer over h whose cache holds up to 4,096 records.
func New[R, FX any](h Host[R, FX]) *Committer[R, FX] {
	return &Committer[R, FX]{h: h, batches: map[string]*batch[R, FX]{}, cache: NewCache(4096, h.Rev)}
}

// Cache is the committer's cache of records: the copy each next batch
// swaps against, which readers may share (Cache.Shared).
func (c *Committer[R, FX]) Cache() *Cache[R] { return c.cache }

// Do runs m on record id and commits it, together with whatever else is
// queued for the record, and returns m's value or its error (or the
// commit's error). When m changed nothing no write is made.
func (c *Committer[R, FX]) Do(ctx context.Context, id string, m Mutation[R, FX]) (any, error) {
	p := &pending[R, FX]{ctx: ctx, m: m, done: make(chan result, 1)}
	c.mu.Lock()
	b, busy := c.batches[id]
	if busy {
		b.items = append(b.items, p)
		c.mu.Unlock()
	} else {
		c.batches[id] = &batch[R, FX]{items: []*pending[R, FX]{p}}
		c.mu.Unlock()
		go c.lead(id)
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

// Created tells the committer that record id was written elsewhere (a
// create), as data of revision rev at ver: the cache and the per-object
// pace take it.
func (c *Committer[R, FX]) Created(id string, data []byte, ver blob.Version, rev int64) {
	c.cache.Put(id, data, ver, rev)
	c.wrote(id)
}

// lead commits batches for id until none is queued.
func (c *Committer[R, FX]) lead(id string) {
	for {
		c.mu.Lock()
		b := c.batches[id]
		if len(b.items) == 0 {
			delete(c.batches, id)
			if at, ok := c.throttledAt[id]; ok && time.Since(at) >= CongestedFor {
				delete(c.throttledAt, id)
			}
			c.mu.Unlock()
			return
		}
		items := b.items
		b.items = nil
		c.mu.Unlock()
		c.commitSafe(id, items)
	}
}

// commitSafe is commit that survives a panic outside the mutations (a bug
// in the committer or its host): the batch is answered with an internal
// error and the leader goes on with the next batch.
func (c *Committer[R, FX]) commitSafe(id string, items []*pending[R, FX]) {
	defer func() {
		if p := recover(); p != nil {
			c.h.Log.Error("the committer panicked; the batch fails, the process goes on", "run", id, "panic", p, "stack", string(debug.Stack()))
			c.cache.Drop(id)
			for _, it := range items {
				select {
				case it.done <- result{err: &errs.InternalError{Message: "internal error while committing to run " + id}}:
				default:
				}
			}
		}
	}()
	c.commit(id, items)
}

// commit applies one batch with retries on lost swaps.
func (c *Committer[R, FX]) commit(id string, items []*pending[R, FX]) {
	ctx, cancel := context.WithTimeout(context.Background(), c.h.Timeout)
	defer cancel()
	useCache := true
	paced := false // at most one wait per batch
	for attempt := 0; ; attempt++ {
		raw, ver, fromCache, err := c.base(ctx, id, useCache)
		if err != nil {
			c.finish(items, nil, nil, err, nil)
			return
		}
		fx := c.h.Begin()
		rec, vals, errs, err := c.decide(ctx, id, raw, items, fx)
		if err != nil {
			c.finish(items, nil, nil, err, nil)
			return
		}
		// Records are always encoded by encoding/json, whose encoding is
		// deterministic: unchanged bytes mean nothing to write.
		if bytes.Equal(mustJSON(rec), raw) {
			if fromCache {
				// Refusals and no-ops decided on a cached copy are only
				// trusted from a fresh read: the copy may be stale.
				useCache = false
				continue
			}
			c.finish(items, vals, errs, nil, fx) // nothing to write
			return
		}
		if !paced && c.pace(ctx, id) {
			// Waited out the store's per-object period: take what queued
			// meanwhile (decided again on the cached copy).
			paced = true
			items = c.takeQueued(id, items)
			continue
		}
		data, nv, err := c.h.Write(ctx, rec, ver, fx)
		if before := (*BeforeError)(nil); errors.As(err, &before) {
			c.finish(items, vals, errs, errsUnavailable(before.Err), nil)
			return
		}
		switch {
		case err == nil:
			c.cache.Put(id, data, nv, c.h.Rev(rec))
			c.wrote(id)
			c.h.Landed(rec, fx, len(items), attempt)
			c.finish(items, vals, errs, nil, fx)
			return
		case errors.Is(err, blob.ErrPreconditionFailed), errors.Is(err, blob.ErrNotFound):
			// Lost the race: read the winner's record and decide again.
			c.cache.Drop(id)
			useCache = false
		case blob.IsRetryable(err) && attempt < 20 && errors.Is(err, blob.ErrThrottled):
			// Refused, nothing written: the cached copy and its version
			// are still the ones to swap against (a write elsewhere
			// meanwhile fails the swap and makes the read). The record
			// counts as congested meanwhile (Congested). The object takes
			// about a write a second: retrying at once only spends
			// requests. What queued meanwhile rides in this batch instead
			// of waiting for the next.
			c.Throttled(id)
			sleep(ctx, time.Duration(100+rand.IntN(100))*time.Millisecond)
			items = c.takeQueued(id, items)
		case blob.IsRetryable(err) && attempt < 20:
			c.cache.Drop(id)
			useCache = false
			throttle.Jitter(ctx, attempt)
		default:
			c.finish(items, vals, errs, errsUnavailable(err), nil)
			return
		}
		if attempt >= 50 {
			c.finish(items, vals, errs, errsUnavailable(fmt.Errorf("run %s: gave up after %d conflicting writes", id, attempt)), nil)
			return
		}
	}
}

func errsUnavailable(err error) error { return errs.Unavailable(err) }

// base is the record a batch is decided on, with its version: the cached
// copy when useCache and the cache has one (fromCache), else read from
// the bucket and cached.
func (c *Committer[R, FX]) base(ctx context.Context, id string, useCache bool) (raw []byte, ver blob.Version, fromCache bool, err error) {
	if cached, v, ok := c.cache.Get(id); ok && useCache {
		return cached, v, true, nil
	}
	o, err := c.h.Read(ctx, id)
	if err != nil {
		return nil, "", false, err
	}
	c.cache.Put(id, o.Data, o.Version, 0)
	return o.Data, o.Version, false, nil
}

// decide applies a batch's mutations to raw (applyAll), then the host's
// Decide.
func (c *Committer[R, FX]) decide(ctx context.Context, id string, raw []byte, items []*pending[R, FX], fx *FX) (*R, []any, []error, error) {
	rec, vals, errs, err := c.applyAll(id, raw, items, fx)
	if err != nil || c.h.Decide == nil {
		return rec, vals, errs, err
	}
	if err := c.h.Decide(ctx, rec, fx); err != nil {
		return nil, nil, nil, err
	}
	return rec, vals, errs, nil
}

// applyAll runs a batch's mutations on a fresh decode of raw, in order.
// A mutation that panics is answered with an internal error and the batch
// is applied again without it (its half-done changes must not be
// written); a mutation whose changes would grow the record past MaxBytes
// is refused with too_large and the rest applied without it. Neither
// stops the committer or the process.
func (c *Committer[R, FX]) applyAll(id string, raw []byte, items []*pending[R, FX], fx *FX) (*R, []any, []error, error) {
	max := c.h.MaxBytes
	excluded := make([]error, len(items))
	for {
		var rec R
		if err := object.Decode(raw, &rec); err != nil {
			return nil, nil, nil, fmt.Errorf("run %s: stored record is corrupt: %w", id, err)
		}
		c.h.Reset(fx, &rec)
		vals := make([]any, len(items))
		errv := make([]error, len(items))
		size := len(raw)
		redo := false
		for i, p := range items {
			if excluded[i] != nil {
				errv[i] = excluded[i]
				continue
			}
			if err := p.ctx.Err(); err != nil {
				errv[i] = err
				continue
			}
			var perr error
			vals[i], errv[i], perr = c.safeApply(id, p.m, &rec, fx)
			if perr != nil {
				excluded[i], redo = perr, true
				break
			}
			if errv[i] == nil && size+(64<<10) > max {
				// Near the limit: measure after each change (rare; records
				// are far below it normally).
				if n := len(mustJSON(&rec)); n > max {
					excluded[i], redo = errs.Reject(cairn.ReasonTooLarge,
						"run %s: this change would grow the run record to %d bytes, over its %d-byte limit (max_run_record_bytes); outputs, state or events are too large", id, n, max), true
					break
				} else {
					size = n
				}
			}
		}
		if !redo {
			return &rec, vals, errv, nil
		}
	}
}

// safeApply runs one mutation, turning a panic into an error.
func (c *Committer[R, FX]) safeApply(id string, m Mutation[R, FX], r *R, fx *FX) (val any, err error, panicked error) {
	defer func() {
		if p := recover(); p != nil {
			c.h.Log.Error("a run mutation panicked; the request fails, the process goes on", "run", id, "panic", p, "stack", string(debug.Stack()))
			panicked = &errs.InternalError{Message: fmt.Sprintf("internal error while applying the change to run %s", id)}
		}
	}()
	val, err = m(r, fx)
	return val, err, nil
}

// finish answers every item of a batch: its own value and error, or
// failed (a store error) when the batch could not be written. The effects
// of a written batch are carried out once, before anyone is answered, so
// a worker that hears "completed" can already claim what became ready.
func (c *Committer[R, FX]) finish(items []*pending[R, FX], vals []any, errv []error, failed error, fx *FX) {
	if failed == nil && fx != nil {
		c.h.After(fx)
	}
	for i, p := range items {
		r := result{}
		if vals != nil {
			r.val, r.err = vals[i], errv[i]
		}
		if failed != nil && r.err == nil {
			r.err = failed
		}
		p.done <- r
	}
}

// takeQueued moves the mutations queued for id since its batch was taken
// into items (the leader's batch, being retried).
func (c *Committer[R, FX]) takeQueued(id string, items []*pending[R, FX]) []*pending[R, FX] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.batches[id]; b != nil && len(b.items) > 0 {
		items = append(items, b.items...)
		b.items = nil
	}
	return items
}

// Throttled records that a write of record id was throttled.
func (c *Committer[R, FX]) Throttled(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.throttledAt == nil {
		c.throttledAt = map[string]time.Time{}
	}
	c.throttledAt[id] = time.Now()
}

// Congested reports whether record id is congested: a batch is being
// written and a write was throttled in the last CongestedFor.
func (c *Committer[R, FX]) Congested(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.throttledAt[id]
	_, busy := c.batches[id]
	return ok && busy && time.Since(at) < CongestedFor
}

// Hold marks a batch of record id as in flight without one, for tests
// that need a congested record; release undoes it.
func (c *Committer[R, FX]) Hold(id string) (release func()) {
	c.mu.Lock()
	c.batches[id] = &batch[R, FX]{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.batches, id)
		c.mu.Unlock()
	}
}

// pace waits out the store's per-object period when the record was
// written less than that ago (rather than be refused), and reports
// whether it waited. The record counts as congested meanwhile, as after a
// refusal.
func (c *Committer[R, FX]) pace(ctx context.Context, id string) bool {
	wait := c.paceWait(id)
	if wait <= 0 {
		return false
	}
	c.Throttled(id)
	sleep(ctx, wait)
	return true
}

// wrote notes that this instance wrote record id now (for the per-object
// spacing; nothing when the store has no per-object limit).
func (c *Committer[R, FX]) wrote(id string) {
	if c.h.WritesPerSecond <= 0 {
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
	c.wroteAt[id] = now
}

// period is the per-object write period (0: none).
func (c *Committer[R, FX]) period() time.Duration {
	if r := c.h.WritesPerSecond; r > 0 {
		return time.Duration(float64(time.Second) / r)
	}
	return 0
}

// paceWait is how long to wait before writing record id again.
func (c *Committer[R, FX]) paceWait(id string) time.Duration {
	period := c.period()
	if period == 0 {
		return 0
	}
	c.mu.Lock()
	t, ok := c.wroteAt[id]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	return period - time.Since(t)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

var mustJSON = object.JSON
