package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/notify"
)

// The instance's lease cache: the lease objects this instance wrote
// (created at claim, swapped by started, heartbeat), with the version each
// write returned. A worker call whose lease id matches a cached lease
// (worker, claim time and nonce, as a read would check) is proven from the
// cache without reading the lease: the cached bytes are what this instance
// wrote, so the id's nonce is proven the same way. The cache is a hint,
// not state: every write of a lease is a compare-and-swap against the
// cached version, so a lease changed elsewhere (a reaper's fence, a
// heartbeat through another instance) fails the swap, the entry is
// dropped and the call reads the lease. A complete or fail changes no
// lease: the run record decides it (checkCurrent), and every fence is
// committed to the run record before anyone is told "fenced"
// (refuseFenced, recoverAttempt), so a complete proven from a stale copy
// is refused there exactly as one that read the lease just before the
// fence landed.
//
// An at_most_once lease is trusted from the cache only once its started
// was recorded by this instance: a started recorded through another
// instance would be missing from the copy, and the complete refused as
// not_started.

// leaseKey is the cache key of a lease: its object key.
func (e *Engine) leaseKey(run, step string, attempt int) string {
	return e.keys.Lease(run, step, attempt)
}

// cacheLease remembers a lease this instance wrote, at version ver.
func (e *Engine) cacheLease(l *leaseRecord, ver blob.Version) {
	if ver == "" || l.State != leaseActive || (l.key != "" && l.key != e.leaseKey(l.Run, l.Step, l.Attempt)) {
		e.forgetLease(l.Run, l.Step, l.Attempt)
		return
	}
	e.commits.leases.put(e.leaseKey(l.Run, l.Step, l.Attempt), mustJSON(l), ver)
}

// forgetLease drops a lease from the cache: it ended, or a write against
// the cached version failed.
func (e *Engine) forgetLease(run, step string, attempt int) {
	e.commits.leases.drop(e.leaseKey(run, step, attempt))
}

// cachedLease returns the cached lease tok names when the cache holds it,
// the id matches it, and it may be trusted without a read (see above).
func (e *Engine) cachedLease(tok leaseToken) (*leaseRecord, blob.Version, bool) {
	raw, ver, ok := e.commits.leases.get(e.leaseKey(tok.Run, tok.Step, tok.Attempt))
	if !ok {
		return nil, "", false
	}
	var l leaseRecord
	if json.Unmarshal(raw, &l) != nil || !tok.matches(&l) || l.State != leaseActive {
		return nil, "", false
	}
	if l.Delivery == cairn.AtMostOnce && l.StartedAt == nil {
		return nil, "", false
	}
	return &l, ver, true
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

// runReads are the run-record reads of claims in flight, by run: the
// claims that miss the cache while one is in flight share it, and it
// refreshes the committer's cache, so the claims of a wide fan-out whose
// commits land on another instance read and decode the record once per
// revision, not once each (docs/DECISIONS.md, "Engine limits at scale").
type runReads struct {
	mu sync.Mutex
	m  map[string]*claimRead
}

type claimRead struct {
	done chan struct{}
	r    *runRecord
	err  error
}

// readRunShared reads run's record for a claim, sharing a read in flight
// when its answer is at least revision need (a read that began before
// the commit a hint announces may miss it: then this claim reads again).
// The record is shared: it must not be changed.
func (e *Engine) readRunShared(ctx context.Context, run string, need int64) (*runRecord, error) {
	e.reads.mu.Lock()
	if x, ok := e.reads.m[run]; ok {
		e.reads.mu.Unlock()
		select {
		case <-x.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if x.err == nil && x.r.Rev >= need {
			return x.r, nil
		}
		return e.readRunCaching(ctx, run)
	}
	x := &claimRead{done: make(chan struct{})}
	if e.reads.m == nil {
		e.reads.m = map[string]*claimRead{}
	}
	e.reads.m[run] = x
	e.reads.mu.Unlock()
	// Not the first claim's context: the others wait on this read.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.CommitTimeout)
	x.r, x.err = e.readRunCaching(rctx, run)
	cancel()
	e.reads.mu.Lock()
	delete(e.reads.m, run)
	e.reads.mu.Unlock()
	close(x.done)
	return x.r, x.err
}

// readRunCaching reads run's record and offers it to the committer's
// cache (as the copy its next commit swaps against, and claims decide
// on), unless the cache holds a newer one.
func (e *Engine) readRunCaching(ctx context.Context, run string) (*runRecord, error) {
	r, o, err := e.getRun(ctx, run)
	if err != nil {
		return nil, err
	}
	e.commits.cache.offer(run, o.Data, o.Version, r)
	return r, nil
}
