package engine

import (
	"context"
	"encoding/json"

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
	return e.keys.lease(run, step, attempt)
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
	r, err := e.readRun(ctx, run)
	return r, false, err
}
