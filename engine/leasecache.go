package engine

import (
	"encoding/json"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// The instance's lease cache: the lease objects this instance wrote
// (created at claim, swapped by started, heartbeat), with the version each
// write returned, and the inline leases its commits recorded (inline.go,
// at inlineVersion). A worker call whose lease id matches a cached lease
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
	if l.inline != (ver == inlineVersion) {
		e.forgetLease(l.Run, l.Step, l.Attempt)
		return
	}
	e.leases.Put(e.leaseKey(l.Run, l.Step, l.Attempt), object.JSON(l), ver)
}

// forgetLease drops a lease from the cache: it ended, or a write against
// the cached version failed.
func (e *Engine) forgetLease(run, step string, attempt int) {
	e.leases.Drop(e.leaseKey(run, step, attempt))
}

// cachedLease returns the cached lease tok names when the cache holds it,
// the id matches it, and it may be trusted without a read (see above).
func (e *Engine) cachedLease(tok leaseToken) (*leaseRecord, blob.Version, bool) {
	raw, ver, ok := e.leases.Get(e.leaseKey(tok.Run, tok.Step, tok.Attempt))
	if !ok {
		return nil, "", false
	}
	var l leaseRecord
	if json.Unmarshal(raw, &l) != nil || !tokenMatches(tok, &l) || l.State != leaseActive {
		return nil, "", false
	}
	if l.Delivery == cairn.AtMostOnce && l.StartedAt == nil {
		return nil, "", false
	}
	// An inline lease this instance recorded (inline.go): its first write
	// is a create, which fails when a fence or a write elsewhere made the
	// object first.
	l.inline = ver == inlineVersion
	return &l, ver, true
}
