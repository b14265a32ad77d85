package lease

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/commit"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/par"
)

// Objects writes one instance's lease objects and caches the ones it
// wrote.
//
// The cache: the lease objects this instance wrote (created at claim,
// swapped by started, heartbeat), with the version each write returned,
// and the inline leases its commits recorded (engine/inline.go, at
// InlineVersion). A worker call whose lease id matches a cached lease
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
type Objects struct {
	store *blob.Bucket
	keys  keys.Layout
	saw   func(now time.Time, err error) // told every create's outcome (admission control)
	cache *commit.Cache[Record]
	// unsettled are this instance's lease creates whose outcome it could
	// not learn, by key: their nonces.
	unsettled par.Lists[string, string]
}

// New returns the lease objects of store in layout k, caching up to max
// leases; saw is told the outcome of every create.
func New(store *blob.Bucket, k keys.Layout, max int, saw func(now time.Time, err error)) *Objects {
	return &Objects{store: store, keys: k, saw: saw, cache: commit.NewCache[Record](max, nil)}
}

// Unsettled reports whether the lease at key is an unsettled create of
// this instance: held by nobody, a claim takes it over.
func (o *Objects) Unsettled(key string) bool { return o.unsettled.Has(key) }

// Create writes lease l at key, create-only, and settles an outcome it
// cannot know: a timeout, a lost answer, a retry that met a write
// (perhaps its own), or a lease in place that may be an earlier create of
// this instance whose answer it never got, which nobody holds. Either
// would sit unclaimed until it expired (forever without a reaper), so it
// reads the lease back. blob.ErrPreconditionFailed: another claim holds
// the attempt. A version of "" with no error: ours, its version unknown.
func (o *Objects) Create(ctx context.Context, key string, l *Record, now time.Time) (blob.Version, error) {
	ver, err := o.store.Create(ctx, key, object.JSON(l))
	o.saw(now, err)
	lost := o.unsettled.Get(key) // earlier creates of this attempt here whose outcome is unknown
	if err != nil && (!errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrRetriedWrite) || len(lost) > 0) {
		got, gver, rerr := object.Read[Record](ctx, o.store, key)
		switch {
		case rerr != nil:
			if !errors.Is(err, blob.ErrPreconditionFailed) {
				// Still unknown: the next claim of this attempt (the hint
				// goes back to the hub) decides it.
				o.unsettled.Add(key, l.Nonce)
			}
		case got.Nonce == l.Nonce:
			err, ver = nil, "" // ours, but its version unknown: not cached
		case slices.Contains(lost, got.Nonce) && got.State == Active:
			// An earlier create of ours landed and was never handed out:
			// take it over (a swap: a fence or another takeover wins).
			if ver, err = o.store.Swap(ctx, key, object.JSON(l), gver); err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
				o.unsettled.Add(key, l.Nonce) // this swap's outcome is unknown in turn
			}
		default:
			err = blob.ErrPreconditionFailed
		}
		if rerr == nil && (err == nil || !slices.Contains(lost, got.Nonce)) {
			o.unsettled.Drop(key) // settled: ours now, or another claim's
		}
	}
	return ver, err
}

// Write writes the new content of lease l, read at version ver: a swap of
// its object, or, for an inline lease, the create of its object
// (blob.ErrPreconditionFailed when one exists: a fence or another write
// landed first, and the caller reads it).
func (o *Objects) Write(ctx context.Context, l *Record, ver blob.Version) (blob.Version, error) {
	if l.Inline || ver == InlineVersion {
		c := *l
		c.Inline = false
		nv, err := o.store.Create(ctx, l.KeyIn(o.keys), object.JSON(&c))
		if errors.Is(err, blob.ErrRetriedWrite) {
			err = blob.ErrPreconditionFailed // perhaps ours: the caller reads it
		}
		if err == nil {
			l.Inline = false
		}
		return nv, err
	}
	return o.store.Swap(ctx, l.KeyIn(o.keys), object.JSON(l), ver)
}

// cacheKey is the cache key of a lease: its object key.
func (o *Objects) cacheKey(run, step string, attempt int) string {
	return o.keys.Lease(run, step, attempt)
}

// Remember caches a lease this instance wrote, at version ver.
func (o *Objects) Remember(l *Record, ver blob.Version) {
	if ver == "" || l.State != Active || (l.Key != "" && l.Key != o.cacheKey(l.Run, l.Step, l.Attempt)) {
		o.Forget(l.Run, l.Step, l.Attempt)
		return
	}
	if l.Inline != (ver == InlineVersion) {
		o.Forget(l.Run, l.Step, l.Attempt)
		return
	}
	o.cache.Put(o.cacheKey(l.Run, l.Step, l.Attempt), object.JSON(l), ver, 0)
}

// Forget drops a lease from the cache: it ended, or a write against the
// cached version failed.
func (o *Objects) Forget(run, step string, attempt int) {
	o.cache.Drop(o.cacheKey(run, step, attempt))
}

// Cached returns the cached lease tok names when the cache holds it, the
// id matches it, and it may be trusted without a read (see Objects).
func (o *Objects) Cached(tok keys.LeaseToken) (*Record, blob.Version, bool) {
	raw, ver, ok := o.cache.Get(o.cacheKey(tok.Run, tok.Step, tok.Attempt))
	if !ok {
		return nil, "", false
	}
	var l Record
	if json.Unmarshal(raw, &l) != nil || !l.Matches(tok) || l.State != Active {
		return nil, "", false
	}
	if l.Delivery == cairn.AtMostOnce && l.StartedAt == nil {
		return nil, "", false
	}
	// An inline lease this instance recorded (engine/inline.go): its first
	// write is a create, which fails when a fence or a write elsewhere
	// made the object first.
	l.Inline = ver == InlineVersion
	return &l, ver, true
}

// Fence marks an active lease expired (why: "timeout" or "expired"): a
// swap of its object, or for an inline lease the create of its object
// already expired (a heartbeat creating it live and this create race on
// one key, and exactly one lands). From then on its worker's started and
// heartbeat are refused, so what is decided about the attempt cannot race
// them. It returns blob.ErrPreconditionFailed when the lease changed
// since it was read.
func (o *Objects) Fence(ctx context.Context, l *Record, ver blob.Version, why string) error {
	f := *l
	f.State, f.ExpiredWhy = Expired, why
	_, err := o.Write(ctx, &f, ver)
	o.Forget(l.Run, l.Step, l.Attempt)
	if err == nil {
		*l = f
	}
	return err
}
