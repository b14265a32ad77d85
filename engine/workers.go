package engine

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/workers"
)

// Register stores the worker's definitions and its record. A worker that
// gives no id gets a new one, which the response carries: the server
// cannot see the host and pid an SDK derives its id from, and any id it
// could derive from the request alone would be shared by every process
// sending the same definitions.
func (e *Engine) Register(ctx context.Context, req cairn.RegisterRequest) (*cairn.RegisterResponse, error) {
	if req.WorkerID == "" {
		req.WorkerID = keys.NewWorkerID(e.now())
	} else if err := keys.WorkerID.Check("worker_id", req.WorkerID); err != nil {
		return nil, err
	}
	if err := e.registerWorkflows(ctx, req.Workflows); err != nil {
		return nil, err
	}
	if err := e.workers.Put(ctx, workers.Registration(req.WorkerID, e.now(), req.Labels, req.Workflows)); err != nil {
		return nil, err
	}
	return &cairn.RegisterResponse{
		WorkerID:    req.WorkerID,
		LeaseTTLMs:  e.cfg.LeaseTTL.Milliseconds(),
		HeartbeatMs: e.cfg.HeartbeatInterval.Milliseconds(),
		MaxHoldMs:   e.ClaimHold().Milliseconds(),
	}, nil
}

// worker is worker id's record, cached for claims (engine/internal/workers).
func (e *Engine) worker(ctx context.Context, id string) (cachedWorker, error) {
	return e.workers.Get(ctx, id)
}

// StopWorker records that a worker stopped gracefully: it is listed as
// gone at once.
func (e *Engine) StopWorker(ctx context.Context, id string) error { return e.workers.Stop(ctx, id) }

// ListWorkers lists registered workers.
func (e *Engine) ListWorkers(ctx context.Context) ([]cairn.WorkerInfo, error) {
	return e.workers.List(ctx)
}

// WorkerSeenEvery is how often an instance notes a worker's call (on its
// claims and heartbeats); the worker's record is written only when that is
// a change (workers.RefreshEvery).
const WorkerSeenEvery = workers.SeenEvery

// WorkerRefreshEvery is how old a calling worker's record gets before it
// is written again; the alive window is two of these plus the claim slack.
const WorkerRefreshEvery = workers.RefreshEvery

// workerAliveWindow is how long after it was last seen a worker counts as
// alive (workers.AliveWindow).
func (e *Engine) workerAliveWindow() time.Duration { return e.workers.Alive }

// seen notes, at most once per WorkerSeenEvery per instance, that a worker
// called (in the background).
func (e *Engine) seen(worker string) { e.workers.Seen(worker) }

// Settle waits for the engine's background bookkeeping (worker sightings)
// to finish: benchmarks call it before they count requests, so a per-worker
// cost is not billed to the steps measured.
func (e *Engine) Settle() { e.background.Wait() }

// background runs the engine's bookkeeping goroutines (workers.Background).
type background = workers.Background
