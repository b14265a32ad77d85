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
	rec := workerRecord{ID: req.WorkerID, RegisteredAt: e.now(), Labels: req.Labels}
	for _, w := range req.Workflows {
		rec.Workflows = append(rec.Workflows, workflowID{Name: w.Name, Version: w.Version})
	}
	if err := e.workers.Put(ctx, &rec); err != nil {
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
	return e.workers.List(ctx, e.workerAliveWindow())
}

// WorkerSeenEvery is how often an instance records that a worker is
// alive (on its claims and heartbeats): one read and one conditional write
// of the worker record per worker per instance per period, never one per
// call.
const WorkerSeenEvery = workers.SeenEvery

// workerAliveWindow is how long after it was last seen a worker counts as
// alive: two recording periods (a worker seen just after a recording is
// recorded again a period later) plus the longest claim hold and the
// pause an idle worker is told to take between claims.
func (e *Engine) workerAliveWindow() time.Duration {
	return 2*WorkerSeenEvery + e.MaxClaimHold() + e.ClaimPause()
}

// seen records, at most once per WorkerSeenEvery per instance, that a
// worker called (in the background).
func (e *Engine) seen(worker string) { e.workers.Seen(worker) }

// Settle waits for the engine's background bookkeeping (worker sightings)
// to finish: benchmarks call it before they count requests, so a per-worker
// cost is not billed to the steps measured.
func (e *Engine) Settle() { e.background.Wait() }

// background runs the engine's bookkeeping goroutines (workers.Background).
type background = workers.Background
