// Package workers is the engine's registry of workers: their records in
// the bucket, a cache of them for claims, and the sightings that keep a
// record's last_seen_at fresh (one write per worker per instance per
// SeenEvery, never one per call).
package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// Record is a registered worker.
type Record struct {
	ID           string            `json:"id"`
	Workflows    []WorkflowID      `json:"workflows"`
	RegisteredAt time.Time         `json:"registered_at"`
	Labels       map[string]string `json:"labels,omitempty"`
	// LastSeenAt is the last claim or heartbeat an instance recorded (at
	// most one write per worker per instance per SeenEvery).
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
	// StoppedAt is when the worker said it stopped (its graceful drain
	// ended): it is gone from then until it registers again.
	StoppedAt *time.Time `json:"stopped_at,omitempty"`
}

// WorkflowID names a workflow definition: a name at a version.
type WorkflowID = keys.WorkflowID

// Cached is a worker record as claims use it: with the set of what it
// serves, and when it was read.
type Cached struct {
	Rec    *Record
	Served map[WorkflowID]bool
	at     time.Time
}

// CacheTTL is how long a cached record is trusted. A record changes only
// when its worker registers again, which it does on every start; an
// instance that missed that re-reads after CacheTTL.
const CacheTTL = time.Minute

// SeenEvery is how often an instance records that a worker is alive (on
// its claims and heartbeats): one read and one conditional write of the
// worker record per worker per instance per period, never one per call.
const SeenEvery = time.Minute

// Registry is an instance's view of the workers.
type Registry struct {
	store *blob.Bucket
	keys  keys.Layout
	now   func() time.Time // the engine's clock
	log   *slog.Logger
	bg    *Background

	mu   sync.Mutex
	seen *cache.Cache[string, time.Time] // when this instance last recorded a worker as seen (bounded)
	m    map[string]Cached

	live liveReading
}

// liveReading is the instance's latest reading of which workflow
// versions live workers serve (Serving).
type liveReading struct {
	mu     sync.Mutex
	at     time.Time
	served map[string][]map[string]string // name@version → the labels of each live worker serving it
}

// LiveTTL is how long an instance reuses its reading of the workers list
// to answer whether a workflow@version has a live worker.
const LiveTTL = 15 * time.Second

// Serving returns, for each workflow@version a live worker serves (one
// seen within alive), the labels of each such worker, from a reading at
// most LiveTTL old; ok is false when the workers list cannot be read
// (then nothing is claimed about liveness). A registration here forgets
// the reading.
func (r *Registry) Serving(ctx context.Context, alive time.Duration) (map[string][]map[string]string, bool) {
	c := &r.live
	c.mu.Lock()
	defer c.mu.Unlock()
	now := r.now()
	if c.served != nil && now.Sub(c.at) < LiveTTL && !now.Before(c.at) {
		return c.served, true
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, err := r.List(ctx, alive)
	if err != nil {
		r.log.Debug("reading the workers list for liveness failed", "err", err)
		return nil, false
	}
	served := map[string][]map[string]string{}
	for _, w := range ws {
		if !w.Alive {
			continue
		}
		for _, id := range w.Workflows {
			served[id] = append(served[id], w.Labels)
		}
	}
	c.served, c.at = served, now
	return served, true
}

// New returns a registry whose sightings run on bg.
func New(store *blob.Bucket, k keys.Layout, now func() time.Time, log *slog.Logger, bg *Background) *Registry {
	return &Registry{store: store, keys: k, now: now, log: log, bg: bg, m: map[string]Cached{}, seen: cache.New[string, time.Time](100_000)}
}

// Put writes a worker's record (a registration) and caches it.
func (r *Registry) Put(ctx context.Context, rec *Record) error {
	if _, err := r.store.Put(ctx, r.keys.Worker(rec.ID), object.JSON(rec), blob.WriteOptions{}); err != nil {
		return err
	}
	r.cache(rec)
	r.live.mu.Lock()
	r.live.served = nil // a new worker may serve what none served
	r.live.mu.Unlock()
	return nil
}

func (r *Registry) cache(rec *Record) Cached {
	cw := Cached{Rec: rec, Served: map[WorkflowID]bool{}, at: r.now()}
	for _, w := range rec.Workflows {
		cw.Served[w] = true
	}
	r.mu.Lock()
	r.m[rec.ID] = cw
	r.mu.Unlock()
	return cw
}

// Get returns worker id's record, cached for up to CacheTTL.
func (r *Registry) Get(ctx context.Context, id string) (Cached, error) {
	if err := keys.WorkerID.Check("worker_id", id); err != nil {
		return Cached{}, err
	}
	r.mu.Lock()
	cw, ok := r.m[id]
	r.mu.Unlock()
	if now := r.now(); ok && now.Sub(cw.at) < CacheTTL && !now.Before(cw.at) {
		return cw, nil
	}
	rec, _, err := object.Read[Record](ctx, r.store, r.keys.Worker(id))
	if errors.Is(err, blob.ErrNotFound) {
		return Cached{}, &errs.NotFoundError{What: "worker", ID: id}
	}
	if err != nil {
		return Cached{}, err
	}
	return r.cache(rec), nil
}

// List lists the registered workers; one counts as alive when it was
// seen within alive.
func (r *Registry) List(ctx context.Context, alive time.Duration) ([]cairn.WorkerInfo, error) {
	objs, err := r.store.ListAll(ctx, r.keys.WorkersPrefix())
	if err != nil {
		return nil, err
	}
	out := []cairn.WorkerInfo{}
	for _, o := range objs {
		rec, _, err := object.Read[Record](ctx, r.store, o.Key)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", o.Key, err)
		}
		seen := rec.RegisteredAt
		if rec.LastSeenAt != nil && rec.LastSeenAt.After(seen) {
			seen = *rec.LastSeenAt
		}
		stopped := rec.StoppedAt != nil
		wi := cairn.WorkerInfo{ID: rec.ID, RegisteredAt: rec.RegisteredAt, Labels: rec.Labels, Workflows: []string{},
			LastSeenAt: seen, Alive: r.now().Sub(seen) <= alive && !stopped}
		if stopped {
			wi.StoppedAt = rec.StoppedAt
		}
		for _, w := range rec.Workflows {
			wi.Workflows = append(wi.Workflows, w.String())
		}
		out = append(out, wi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Stop records that worker stopped (its graceful drain ended): the
// listing shows it gone at once rather than after the alive window, until
// it registers again (every start does). One conditional write, retried
// on a lost race with a sighting. Sightings of a stopped worker are not
// recorded: a claim the worker sent before it stopped may reach the
// server after (a held claim it abandoned), and must not bring it back.
func (r *Registry) Stop(ctx context.Context, worker string) error {
	if err := keys.WorkerID.Check("worker_id", worker); err != nil {
		return err
	}
	key := r.keys.Worker(worker)
	for try := 0; ; try++ {
		rec, ver, err := object.Read[Record](ctx, r.store, key)
		if errors.Is(err, blob.ErrNotFound) {
			return &errs.NotFoundError{What: "worker", ID: worker}
		}
		if err != nil {
			return err
		}
		now := r.now()
		rec.StoppedAt = &now
		if _, err = r.store.Swap(ctx, key, object.JSON(rec), ver); !errors.Is(err, blob.ErrPreconditionFailed) || try >= 4 {
			return err
		}
	}
}

// LastSeen is when this instance last recorded worker as seen.
func (r *Registry) LastSeen(worker string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen.Peek(worker)
}

// Seen records, at most once per SeenEvery per instance, that a worker
// called. It runs in the background: a claim or heartbeat never waits for
// it, and a failure only delays the record.
func (r *Registry) Seen(worker string) {
	now := r.now()
	r.mu.Lock()
	if last, ok := r.seen.Get(worker); ok && now.Sub(last) < SeenEvery && !now.Before(last) {
		r.mu.Unlock()
		return
	}
	r.seen.Put(worker, now)
	r.mu.Unlock()
	r.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		key := r.keys.Worker(worker)
		rec, ver, err := object.Read[Record](ctx, r.store, key)
		if err != nil {
			return
		}
		if rec.StoppedAt != nil {
			return // stopped: gone until it registers again (Stop)
		}
		if rec.LastSeenAt != nil && now.Sub(*rec.LastSeenAt) < SeenEvery/2 {
			// Another instance recorded it within half a period (or
			// later than now): the record stays fresh enough without this
			// write. Short claims on Lambda land on a different
			// environment nearly every time, and each would otherwise
			// write the record (docs/SCALE.md, section 4). The record is
			// then at most 1.5 periods old when this instance next looks,
			// inside the alive window's two.
			return
		}
		rec.LastSeenAt = &now
		// A conditional write: a registration that changed the record
		// meanwhile wins, and this sighting is recorded next period.
		if _, err := r.store.Swap(ctx, key, object.JSON(rec), ver); err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
			r.log.Debug("recording a worker sighting failed", "worker", worker, "err", err)
		}
	})
}

// Background runs an engine's bookkeeping goroutines, which requests
// start and Settle and Close wait for. A request may start one while a
// wait is under way (a server stopping still answers the calls in
// flight); a bare sync.WaitGroup forbids that (an Add from zero
// concurrent with Wait), so the mutex orders the two, and once closed
// nothing new starts.
type Background struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	closed  bool
	Started atomic.Int64 // goroutines started, for tests
}

// Go runs f in a goroutine unless closed.
func (b *Background) Go(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.Started.Add(1)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// Wait waits for the goroutines started so far; a start waits meanwhile.
func (b *Background) Wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wg.Wait()
}

// Close stops new starts and waits for the goroutines running.
func (b *Background) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}
