// Package runread reads run records: fresh from the bucket in either key
// layout (a copy of the caller's own), the committer's cached copy (decoded
// once per version and shared by every caller, read-only), and the claims'
// shared reads, one per run in flight, which refresh that cache. It is
// generic over the record and decides nothing (engine/runstore.go says
// who reads what).
package runread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/commit"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/flight"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// Reader reads the run records of one bucket and layout.
type Reader[R any] struct {
	store *blob.Bucket
	keys  keys.Layout
	cache *commit.Cache[R]
	rev   func(*R) int64 // a record's revision
	reads flight.Group[*R]
}

// New returns a reader of store's run records in layout k, with the
// committer's cache; a shared read is bounded by timeout.
func New[R any](store *blob.Bucket, k keys.Layout, cache *commit.Cache[R], rev func(*R) int64, timeout time.Duration) *Reader[R] {
	return &Reader[R]{store: store, keys: k, cache: cache, rev: rev, reads: flight.Group[*R]{Timeout: timeout}}
}

// Get reads run id's record in either layout and decodes it; it returns
// the stored object too (its bytes and version, for a cache). An id that
// cannot be a run id names no run (errs.NotFoundError).
func (rd *Reader[R]) Get(ctx context.Context, id string) (*R, *blob.Object, error) {
	if !keys.RunID.Valid(id) {
		return nil, nil, &errs.NotFoundError{What: "run", ID: id}
	}
	o, err := object.GetEither(ctx, rd.store, rd.keys.Run(id), rd.keys.OtherRun(id))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil, &errs.NotFoundError{What: "run", ID: id}
	}
	if err != nil {
		return nil, nil, err
	}
	var r R
	if err := object.Decode(o.Data, &r); err != nil {
		return nil, nil, fmt.Errorf("run %s: stored record is corrupt: %w", id, err)
	}
	return &r, o, nil
}

// Recent is the committer's cached copy of run when this instance wrote
// or read it within d and has heard of no newer revision since
// (commit.Cache.Recent), shared as Shared's: the caller must not change it.
func (rd *Reader[R]) Recent(run string, d time.Duration) *R {
	r, _ := rd.cache.Recent(run, d)
	return r
}

// Heard says another instance changed run to revision rev: a cached copy
// older than that is dropped.
func (rd *Reader[R]) Heard(run string, rev int64) { rd.cache.Heard(run, rev) }

// Shared is the committer's cached copy of run when it holds a revision
// of at least rev, without reading the bucket: decoded once per version
// and shared by every caller, which must not change it.
func (rd *Reader[R]) Shared(run string, rev int64) *R {
	r, ok := rd.cache.Shared(run)
	if !ok || rd.rev(r) < rev {
		return nil
	}
	return r
}

// ReadShared reads run's record for a claim, one read per run in flight:
// the claims that miss the cache while one is in flight share it, and it
// refreshes the committer's cache, so the claims of a wide fan-out whose
// commits land on another instance read and decode the record once per
// revision, not once each (docs/DECISIONS.md 3.5). A shared read that
// began before the commit a hint announces may miss it (its revision is
// under need): then this claim reads again. The record is shared: it
// must not be changed.
func (rd *Reader[R]) ReadShared(ctx context.Context, run string, need int64) (*R, error) {
	r, shared, err := rd.reads.Do(ctx, run, func(ctx context.Context) (*R, error) { return rd.ReadCaching(ctx, run) })
	if err == nil && rd.rev(r) >= need || !shared {
		return r, err // fresh enough, or this claim's own read (or its context ended)
	}
	return rd.ReadCaching(ctx, run)
}

// ReadCaching reads run's record and offers it to the committer's cache
// (as the copy its next commit swaps against, and claims decide on),
// unless the cache holds a newer one.
func (rd *Reader[R]) ReadCaching(ctx context.Context, run string) (*R, error) {
	r, o, err := rd.Get(ctx, run)
	if err != nil {
		return nil, err
	}
	rd.cache.Offer(run, o.Data, o.Version, r)
	return r, nil
}
