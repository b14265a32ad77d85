package engine

import (
	"context"

	"github.com/cairn-dev/cairn"
	bulk "github.com/cairn-dev/cairn/engine/internal/batch" // "batch" is the committer's (commit.go)
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// Bulk operations: cancel, rerun, pause or resume every run matching a
// filter, as a tracked batch job (docs/ARCHITECTURE.md, "Batches"), kept
// by engine/internal/batch; the methods here forward to it.

// newBatches wires the engine's batches to it.
func newBatches(e *Engine) *bulk.Batches {
	return bulk.New(bulk.Host{
		Store: e.store, Keys: e.keys, Now: e.now, Log: e.log,
		RunKeys: e.scan.RunKeys, CursorMark: runCursorPrefix,
		Run: e.runState, Cancel: e.CancelRun, Pause: e.PauseRun, Resume: e.ResumeRun,
		Rerun: func(ctx context.Context, run, key string) error {
			_, err := e.RerunRun(ctx, run, cairn.RerunRequest{IdempotencyKey: key})
			return err
		},
		PublicError: errs.Public,
		TimerDue:    timer.Due, PutTimer: e.timers.Put, DropTimers: e.timers.Drop, DropOrphanTimers: e.timers.DropOrphans,
	})
}

// StartBatch checks the request, stores the batch and its timer, and does
// its first page.
func (e *Engine) StartBatch(ctx context.Context, req cairn.BatchRequest) (*cairn.Batch, error) {
	return e.batches.Start(ctx, req)
}

// GetBatch returns a batch.
func (e *Engine) GetBatch(ctx context.Context, id string) (*cairn.Batch, error) {
	return e.batches.Get(ctx, id)
}
