package engine

import (
	"context"

	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/notify"
)

// The run-record store: every way the engine reads a run record, in one
// place, and the one way it writes one.
//
//   - fresh: readRun, runs.Get — from the bucket, in either key layout; a
//     copy of the caller's own. runs.Get also returns the stored object
//     (bytes and version) for the committer's cache.
//   - shared: sharedRun — the committer's cached copy when it holds at
//     least a revision, decoded once per version and shared by every
//     caller, which must not change it; claimRun decides claims on it,
//     runs.ReadShared reads for the claims that miss it, one read per run
//     in flight, and refreshes the cache (runs.ReadCaching); a held status
//     request answers from it (and starts from runs.Recent, the same copy
//     when this instance wrote or read it within a second). The reads are
//     engine/internal/runread's.
//   - per call: runMemo — one read per run for the leases of one batched
//     heartbeat; a held status request (watch.go, watch.Hold) — one
//     read per change for the requests an instance holds on a run.
//   - the write: mutate (commit.go), a compare-and-swap of the whole
//     record through the committer, which batches an instance's
//     mutations of a run into one write and keeps the cache; a new run's
//     first record is createRun's (runs.go), create-only, in the same
//     order (timer, pre-writes, record, cache, effects).
//
// A read never decides a write: every mutation runs on the record the
// committer swaps against, and runs again on a fresher one when it loses.

// readRun reads a run record from the bucket (runread.Reader.Get). An id
// that cannot be a run id names no run: entry points refuse it first with
// a validation error; for ids from elsewhere (a lease, a timer key) it is
// simply not found.
func (e *Engine) readRun(ctx context.Context, id string) (*runRecord, error) {
	r, _, err := e.runs.Get(ctx, id)
	return r, err
}

// sharedRun is the committer's cached copy of run when at least rev,
// decoded once per version and shared by every caller, which must not
// change it (runread.Reader.Shared). Claims decide on it (claimRun), so
// the claims of a wide fan-out do not each decode the whole record.
func (e *Engine) sharedRun(run string, rev int64) *runRecord { return e.runs.Shared(run, rev) }

// claimRun is the run record a claim decides its hints on: the
// committer's cached copy when it is at least as new as every hint's
// revision (the commit that made the work ready wrote it, here or read
// by this instance since), else one read. A hint without a revision (from
// a run start, the fallback scan, the reaper) is served from any cached
// copy. It reports whether the record came from the cache: a hint the
// cached copy cannot honour (the step not ready there) is decided again
// on a fresh read, so a stale copy costs one read, never a lost hint.
// The cached copy is shared (sharedRun): a claim reads it and changes
// nothing in it.
func (e *Engine) claimRun(ctx context.Context, run string, hs []notify.Hint) (*runRecord, bool, error) {
	var need int64
	for _, h := range hs {
		need = max(need, h.Rev)
	}
	if r := e.sharedRun(run, need); r != nil {
		c := *r // the struct only: its maps, slices and pointers stay shared and unchanged
		c.fromCache = true
		return &c, true, nil
	}
	r, err := e.runs.ReadShared(ctx, run, need)
	return r, false, err
}

// runMemo reads each run record at most once, for the leases of one
// heartbeat call.
type runMemo = par.Memo[string, *runRecord]

func newRunMemo(ctx context.Context, e *Engine) *runMemo {
	return par.NewMemo(func(run string) (*runRecord, error) { return e.readRun(ctx, run) })
}
