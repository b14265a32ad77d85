package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// RegisterRequest announces a worker and the definitions it serves.
type RegisterRequest struct {
	WorkerID  string            `json:"worker_id,omitempty" maxLength:"128" pattern:"^([A-Za-z0-9][A-Za-z0-9_.:@-]*)?$" doc:"Stable id of the worker process (the SDKs derive it from host and pid). When absent or empty the server generates one and returns it: use that id for claims."`
	Workflows []cairn.Workflow  `json:"workflows" nullable:"false" maxItems:"100" doc:"Definitions the worker serves. Each (name, version) is stored once and immutable."`
	Labels    map[string]string `json:"labels,omitempty" doc:"Free labels shown by cairn workers."`
}

// RegisterResponse carries the two numbers the protocol runs on.
type RegisterResponse struct {
	WorkerID    string `json:"worker_id" doc:"The worker's id: the one registered, or the one generated for a worker that gave none. Claims name it."`
	LeaseTTLMs  int64  `json:"lease_ttl_ms" doc:"A lease expires this long after its claim or last heartbeat."`
	HeartbeatMs int64  `json:"heartbeat_ms" doc:"Send a heartbeat for every running lease this often."`
	MaxHoldMs   int64  `json:"max_hold_ms" doc:"The longest a claim is held open."`
}

// Register stores the worker's definitions and its record. A worker that
// gives no id gets a new one, which the response carries: the server
// cannot see the host and pid an SDK derives its id from, and any id it
// could derive from the request alone would be shared by every process
// sending the same definitions.
func (e *Engine) Register(ctx context.Context, req RegisterRequest) (*RegisterResponse, error) {
	if req.WorkerID == "" {
		req.WorkerID = keys.NewWorkerID(e.now())
	} else if err := keys.WorkerID.Check("worker_id", req.WorkerID); err != nil {
		return nil, err
	}
	if err := e.registerWorkflows(ctx, req.Workflows); err != nil {
		return nil, err
	}
	rec := workerRecord{ID: req.WorkerID, RegisteredAt: e.now(), Labels: req.Labels}
	for _, w := range req.Workflows {
		rec.Workflows = append(rec.Workflows, workflowID{w.Name, w.Version})
	}
	if _, err := e.store.Put(ctx, e.keys.Worker(req.WorkerID), mustJSON(rec), blob.WriteOptions{}); err != nil {
		return nil, err
	}
	e.workers.put(&rec)
	e.live.reset() // a new worker may serve what none served (liveness.go)
	return &RegisterResponse{
		WorkerID:    req.WorkerID,
		LeaseTTLMs:  e.cfg.LeaseTTL.Milliseconds(),
		HeartbeatMs: e.cfg.HeartbeatInterval.Milliseconds(),
		MaxHoldMs:   e.ClaimHold().Milliseconds(),
	}, nil
}

// workerCache keeps worker records read by claims. A record changes only
// when its worker registers again, which it does on every start; an
// instance that missed that re-reads after workerCacheTTL.
type workerCache struct {
	mu   sync.Mutex
	seen *cache.Cache[string, time.Time] // when this instance last recorded a worker as seen (bounded)
	m    map[string]cachedWorker
	now  func() time.Time // the engine's clock
}

type cachedWorker struct {
	rec    *workerRecord
	served map[workflowID]bool
	at     time.Time
}

const workerCacheTTL = time.Minute

func newWorkerCache(now func() time.Time) *workerCache {
	return &workerCache{m: map[string]cachedWorker{}, seen: cache.New[string, time.Time](100_000), now: now}
}

func (c *workerCache) put(rec *workerRecord) cachedWorker {
	cw := cachedWorker{rec: rec, served: map[workflowID]bool{}, at: c.now()}
	for _, w := range rec.Workflows {
		cw.served[w] = true
	}
	c.mu.Lock()
	c.m[rec.ID] = cw
	c.mu.Unlock()
	return cw
}

func (e *Engine) worker(ctx context.Context, id string) (cachedWorker, error) {
	if err := keys.WorkerID.Check("worker_id", id); err != nil {
		return cachedWorker{}, err
	}
	e.workers.mu.Lock()
	cw, ok := e.workers.m[id]
	e.workers.mu.Unlock()
	if ok && e.now().Sub(cw.at) < workerCacheTTL && !e.now().Before(cw.at) {
		return cw, nil
	}
	rec, _, err := readJSON[workerRecord](ctx, e.store, e.keys.Worker(id))
	if isNotFound(err) {
		return cachedWorker{}, &NotFoundError{What: "worker", ID: id}
	}
	if err != nil {
		return cachedWorker{}, err
	}
	return e.workers.put(rec), nil
}

// ListWorkers lists registered workers.
func (e *Engine) ListWorkers(ctx context.Context) ([]cairn.WorkerInfo, error) {
	objs, err := e.store.ListAll(ctx, e.keys.WorkersPrefix())
	if err != nil {
		return nil, err
	}
	out := []cairn.WorkerInfo{}
	for _, o := range objs {
		rec, _, err := readJSON[workerRecord](ctx, e.store, o.Key)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", o.Key, err)
		}
		seen := rec.RegisteredAt
		if rec.LastSeenAt != nil && rec.LastSeenAt.After(seen) {
			seen = *rec.LastSeenAt
		}
		wi := cairn.WorkerInfo{ID: rec.ID, RegisteredAt: rec.RegisteredAt, Labels: rec.Labels, Workflows: []string{},
			LastSeenAt: seen, Alive: e.now().Sub(seen) <= e.workerAliveWindow()}
		for _, w := range rec.Workflows {
			wi.Workflows = append(wi.Workflows, w.String())
		}
		out = append(out, wi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// WorkerSeenEvery is how often an instance records that a worker is
// alive (on its claims and heartbeats): one read and one conditional write
// of the worker record per worker per instance per period, never one per
// call.
const WorkerSeenEvery = time.Minute

// workerAliveWindow is how long after it was last seen a worker counts as
// alive: two recording periods (a worker seen just after a recording is
// recorded again a period later) plus the longest claim hold and the
// pause an idle worker is told to take between claims.
func (e *Engine) workerAliveWindow() time.Duration {
	return 2*WorkerSeenEvery + e.MaxClaimHold() + e.ClaimPause()
}

// seen records, at most once per WorkerSeenEvery per instance, that a
// worker called. It runs in the background: a claim or heartbeat never
// waits for it, and a failure only delays the record.
func (e *Engine) seen(worker string) {
	now := e.now()
	e.workers.mu.Lock()
	if last, ok := e.workers.seen.Get(worker); ok && now.Sub(last) < WorkerSeenEvery && !now.Before(last) {
		e.workers.mu.Unlock()
		return
	}
	e.workers.seen.Put(worker, now)
	e.workers.mu.Unlock()
	e.background.goDo(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		key := e.keys.Worker(worker)
		rec, ver, err := readJSON[workerRecord](ctx, e.store, key)
		if err != nil {
			return
		}
		if rec.LastSeenAt != nil && now.Sub(*rec.LastSeenAt) < WorkerSeenEvery/2 {
			// Another instance recorded it within half a period (or
			// later than now): the record stays fresh enough without this
			// write. Short claims on Lambda land on a different
			// environment nearly every time, and each would otherwise
			// write the record (docs/SCALE.md, section 4). The record is
			// then at most 1.5 periods old when this instance next looks,
			// inside workerAliveWindow's two.
			return
		}
		rec.LastSeenAt = &now
		// A conditional write: a registration that changed the record
		// meanwhile wins, and this sighting is recorded next period.
		if _, err := e.store.Swap(ctx, key, mustJSON(rec), ver); err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
			e.log.Debug("recording a worker sighting failed", "worker", worker, "err", err)
		}
	})
}

// Settle waits for the engine's background bookkeeping (worker sightings)
// to finish: benchmarks call it before they count requests, so a per-worker
// cost is not billed to the steps measured.
func (e *Engine) Settle() { e.background.wait() }

// background runs the engine's bookkeeping goroutines, which requests
// start and Settle and Close wait for. A request may start one while a
// wait is under way (a server stopping still answers the calls in
// flight); a bare sync.WaitGroup forbids that (an Add from zero
// concurrent with Wait), so the mutex orders the two, and once closed
// nothing new starts.
type background struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	closed  bool
	started atomic.Int64 // goroutines started, for tests
}

// goDo runs f in a goroutine unless the engine is closed.
func (b *background) goDo(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.started.Add(1)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// wait waits for the goroutines started so far; a start waits meanwhile.
func (b *background) wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wg.Wait()
}

// close stops new starts and waits for the goroutines running.
func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}
