package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/notify"
)

// The run-record store: every way the engine reads a run record, in one
// place, and the one way it writes one.
//
//   - fresh: readRun, getRun — from the bucket, in either key layout; a
//     copy of the caller's own. getRun also returns the stored object
//     (bytes and version) for the committer's cache.
//   - cached: cachedRun — the committer's cached copy when it holds at
//     least a revision, decoded for the caller (its own copy, no read).
//   - shared: sharedRun — the same copy decoded once per version and
//     shared by every caller, which must not change it; claimRun decides
//     claims on it, readRunShared reads for the claims that miss it, one
//     read per run in flight, and refreshes the cache (readRunCaching).
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

// readRun reads a run record from the bucket. An id that cannot be a run
// id names no run: entry points refuse it first with a validation error;
// for ids from elsewhere (a lease, a timer key) it is simply not found.
func (e *Engine) readRun(ctx context.Context, id string) (*runRecord, error) {
	r, _, err := e.getRun(ctx, id)
	return r, err
}

// getRun reads run id's record in either layout and decodes it; it
// returns the stored object too (its bytes and version, for a cache).
func (e *Engine) getRun(ctx context.Context, id string) (*runRecord, *blob.Object, error) {
	if !keys.RunID.Valid(id) {
		return nil, nil, &NotFoundError{What: "run", ID: id}
	}
	o, err := getEither(ctx, e.store, e.keys.Run(id), e.keys.OtherRun(id))
	if isNotFound(err) {
		return nil, nil, &NotFoundError{What: "run", ID: id}
	}
	if err != nil {
		return nil, nil, err
	}
	var r runRecord
	if err := json.Unmarshal(o.Data, &r); err != nil {
		return nil, nil, fmt.Errorf("run %s: stored record is corrupt: %w", id, err)
	}
	return &r, o, nil
}

// cachedRun returns the committer's cached copy of run when it holds a
// revision of at least rev, without reading the bucket.
func (e *Engine) cachedRun(run string, rev int64) *runRecord {
	raw, _, ok := e.commits.Cache().Get(run)
	if !ok {
		return nil
	}
	var r runRecord
	if json.Unmarshal(raw, &r) != nil || r.Rev < rev {
		return nil
	}
	return &r
}

// sharedRun is cachedRun without a copy of its own: the committer's
// cached copy decoded once per version and shared by every caller, which
// must not change it. Claims decide on it (claimRun), so the claims of a
// wide fan-out do not each decode the whole record.
func (e *Engine) sharedRun(run string, rev int64) *runRecord {
	r, ok := e.commits.Cache().Shared(run)
	if !ok || r.Rev < rev {
		return nil
	}
	return r
}

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
	r, err := e.readRunShared(ctx, run, need)
	return r, false, err
}

// readRunShared reads run's record for a claim, one read per run in
// flight: the claims that miss the cache while one is in flight share it,
// and it refreshes the committer's cache, so the claims of a wide fan-out
// whose commits land on another instance read and decode the record once
// per revision, not once each (docs/DECISIONS.md 3.5). A shared read that began before the commit a hint announces
// may miss it (its revision is under need): then this claim reads again.
// The record is shared: it must not be changed.
func (e *Engine) readRunShared(ctx context.Context, run string, need int64) (*runRecord, error) {
	ch := e.reads.DoChan(run, func() (any, error) {
		// Not the first claim's context: the others wait on this read.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.CommitTimeout)
		defer cancel()
		return e.readRunCaching(rctx, run)
	})
	select {
	case res := <-ch:
		r, _ := res.Val.(*runRecord)
		if res.Err == nil && r.Rev >= need || !res.Shared {
			return r, res.Err // fresh enough, or this claim's own read
		}
		return e.readRunCaching(ctx, run)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readRunCaching reads run's record and offers it to the committer's
// cache (as the copy its next commit swaps against, and claims decide
// on), unless the cache holds a newer one.
func (e *Engine) readRunCaching(ctx context.Context, run string) (*runRecord, error) {
	r, o, err := e.getRun(ctx, run)
	if err != nil {
		return nil, err
	}
	e.commits.Cache().Offer(run, o.Data, o.Version, r)
	return r, nil
}

// runMemo reads each run record at most once, for the leases of one
// heartbeat call.
type runMemo = par.Memo[string, *runRecord]

func newRunMemo(ctx context.Context, e *Engine) *runMemo {
	return par.NewMemo(func(run string) (*runRecord, error) { return e.readRun(ctx, run) })
}
