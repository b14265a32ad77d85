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
// by engine/internal/batch, which the API reaches through Engine.Batches.

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

// Batches are the engine's batches: start and read them
// (engine/internal/batch documents each).
type Batches = bulk.Batches

// Batches returns the engine's batches.
func (e *Engine) Batches() *Batches { return e.batches }
