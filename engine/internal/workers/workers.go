// Package workers is the engine's registry of workers: their records in
// the bucket, a cache of them for claims, and their liveness (liveness.go):
// a record is written when a worker registers, stops, or changes from gone
// to seen, and refreshed once per RefreshEvery while it calls, never once
// per idle minute; records of workers gone for long are deleted.
package workers

import (
	"context"
	"errors"
	"log/slog"
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
	// LastSeenAt is the last claim or heartbeat an instance recorded: at
	// most one write per RefreshEvery while it calls, and one when it calls
	// after GoneAt.
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
	// GoneAt is when the reaper found a lease of it lost (its heartbeats
	// stopped): gone from then until a later call is recorded.
	GoneAt *time.Time `json:"gone_at,omitempty"`
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
	ver    blob.Version // of Rec in the bucket ("" when unknown)
}

// CacheTTL is how long a cached record is trusted. A record changes only
// when its worker registers again, which it does on every start; an
// instance that missed that re-reads after CacheTTL.
const CacheTTL = time.Minute

// Registry is an instance's view of the workers.
type Registry struct {
	store *blob.Bucket
	keys  keys.Layout
	now   func() time.Time // the engine's clock
	log   *slog.Logger
	bg    *Background
	// Alive is how long after it was last seen a worker counts as alive.
	Alive time.Duration

	mu   sync.Mutex
	seen *cache.Cache[string, time.Time] // when this instance last noted a worker's call (bounded)
	m    map[string]Cached
	read *cache.Cache[string, versioned] // the records List read, by key, with their versions (bounded)

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

// New returns a registry whose sightings run on bg. slack is the longest
// a live worker may go between calls (the longest claim hold plus the
// pause between claims): see AliveWindow.
func New(store *blob.Bucket, k keys.Layout, now func() time.Time, log *slog.Logger, bg *Background, slack time.Duration) *Registry {
	return &Registry{store: store, keys: k, now: now, log: log, bg: bg, Alive: AliveWindow(slack), m: map[string]Cached{},
		seen: cache.New[string, time.Time](100_000), read: cache.New[string, versioned](100_000)}
}

// Registration is the record of a worker registering now.
func Registration(id string, now time.Time, labels map[string]string, wfs []cairn.Workflow) *Record {
	rec := &Record{ID: id, RegisteredAt: now, Labels: labels}
	for _, w := range wfs {
		rec.Workflows = append(rec.Workflows, WorkflowID{Name: w.Name, Version: w.Version})
	}
	return rec
}

// Put writes a worker's record (a registration) and caches it.
func (r *Registry) Put(ctx context.Context, rec *Record) error {
	ver, err := r.store.Put(ctx, r.keys.Worker(rec.ID), object.JSON(rec), blob.WriteOptions{})
	if err != nil {
		return err
	}
	r.cache(rec, ver)
	r.live.mu.Lock()
	r.live.served = nil // a new worker may serve what none served
	r.live.mu.Unlock()
	return nil
}

// cache keeps rec, at version ver, for claims and for List.
func (r *Registry) cache(rec *Record, ver blob.Version) Cached {
	cw := Cached{Rec: rec, Served: map[WorkflowID]bool{}, at: r.now(), ver: ver}
	for _, w := range rec.Workflows {
		cw.Served[w] = true
	}
	r.mu.Lock()
	r.m[rec.ID] = cw
	if ver != "" {
		r.read.Put(r.keys.Worker(rec.ID), versioned{rec, ver})
	}
	r.mu.Unlock()
	return cw
}

// forget drops what the instance holds of worker's record: a write of it
// lost a race, so it changed.
func (r *Registry) forget(worker string) {
	r.mu.Lock()
	delete(r.m, worker)
	r.read.Delete(r.keys.Worker(worker))
	r.mu.Unlock()
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
	rec, ver, err := object.Read[Record](ctx, r.store, r.keys.Worker(id))
	if errors.Is(err, blob.ErrNotFound) {
		return Cached{}, &errs.NotFoundError{What: "worker", ID: id}
	}
	if err != nil {
		return Cached{}, err
	}
	return r.cache(rec, ver), nil
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
		ver, err = r.store.Swap(ctx, key, object.JSON(rec), ver)
		if err == nil {
			r.cache(rec, ver)
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) || try >= 4 {
			return err
		}
	}
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
