package engine

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
)

// RegisterRequest announces a worker and the definitions it serves.
type RegisterRequest struct {
	WorkerID  string            `json:"worker_id,omitempty" maxLength:"128" pattern:"^([A-Za-z0-9][A-Za-z0-9_.:@-]*)?$" doc:"Stable id of the worker process (the SDKs derive it from host and pid). When absent or empty the server generates one and returns it: use that id for claims."`
	Workflows []cairn.Workflow  `json:"workflows" maxItems:"100" doc:"Definitions the worker serves. Each (name, version) is stored once and immutable."`
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
		req.WorkerID = newWorkerID(e.now())
	} else if err := workerIDRule.check("worker_id", req.WorkerID); err != nil {
		return nil, err
	}
	if err := e.registerWorkflows(ctx, req.Workflows); err != nil {
		return nil, err
	}
	rec := workerRecord{ID: req.WorkerID, RegisteredAt: e.now(), Labels: req.Labels}
	for _, w := range req.Workflows {
		rec.Workflows = append(rec.Workflows, workflowID{w.Name, w.Version})
	}
	if _, err := e.store.Put(ctx, e.keys.worker(req.WorkerID), mustJSON(rec), blob.WriteOptions{}); err != nil {
		return nil, err
	}
	e.workers.put(&rec)
	return &RegisterResponse{
		WorkerID:    req.WorkerID,
		LeaseTTLMs:  e.cfg.LeaseTTL.Milliseconds(),
		HeartbeatMs: e.cfg.HeartbeatInterval.Milliseconds(),
		MaxHoldMs:   e.MaxClaimHold().Milliseconds(),
	}, nil
}

// workerCache keeps worker records read by claims. A record changes only
// when its worker registers again, which it does on every start; an
// instance that missed that re-reads after workerCacheTTL.
type workerCache struct {
	mu  sync.Mutex
	m   map[string]cachedWorker
	now func() time.Time // the engine's clock
}

type cachedWorker struct {
	rec    *workerRecord
	served map[workflowID]bool
	at     time.Time
}

const workerCacheTTL = time.Minute

func newWorkerCache(now func() time.Time) *workerCache {
	return &workerCache{m: map[string]cachedWorker{}, now: now}
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
	if err := workerIDRule.check("worker_id", id); err != nil {
		return cachedWorker{}, err
	}
	e.workers.mu.Lock()
	cw, ok := e.workers.m[id]
	e.workers.mu.Unlock()
	if ok && e.now().Sub(cw.at) < workerCacheTTL && !e.now().Before(cw.at) {
		return cw, nil
	}
	rec, _, err := readJSON[workerRecord](ctx, e.store, e.keys.worker(id))
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
	objs, err := e.store.ListAll(ctx, e.keys.workersPrefix())
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
		wi := cairn.WorkerInfo{ID: rec.ID, RegisteredAt: rec.RegisteredAt, Labels: rec.Labels, Workflows: []string{}}
		for _, w := range rec.Workflows {
			wi.Workflows = append(wi.Workflows, w.String())
		}
		out = append(out, wi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
