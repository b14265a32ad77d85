package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Key layouts (Config.KeyLayout): the keys of each, and why the sharded
// one, are in engine/internal/keys. An engine reads both layouts (its own
// first; the other only when the object is not found) and writes its own.
const (
	KeyLayoutFlat    = keys.NameFlat
	KeyLayoutSharded = keys.NameSharded
)

// checkKeyLayout validates Config.KeyLayout.
func checkKeyLayout(l string) error {
	switch l {
	case "", KeyLayoutFlat, KeyLayoutSharded:
		return nil
	}
	return fmt.Errorf("engine: key layout %q: want %q or %q", l, KeyLayoutFlat, KeyLayoutSharded)
}

// readEither reads key, and when it is not found, other (the same object
// in the other layout).
func readEither[T any](ctx context.Context, store *blob.Bucket, key, other string) (*T, blob.Version, string, error) {
	v, ver, err := readJSON[T](ctx, store, key)
	if isNotFound(err) && other != key {
		v, ver, err = readJSON[T](ctx, store, other)
		return v, ver, other, err
	}
	return v, ver, key, err
}

// getEither is readEither for raw objects.
func getEither(ctx context.Context, store *blob.Bucket, key, other string) (*blob.Object, error) {
	o, err := store.Get(ctx, key)
	if isNotFound(err) && other != key {
		return store.Get(ctx, other)
	}
	return o, err
}

// readLeaseAt reads the lease of (run, step, attempt) in either layout and
// returns the key it was found at.
func (e *Engine) readLeaseAt(ctx context.Context, run, step string, attempt int) (*leaseRecord, blob.Version, string, error) {
	return readEither[leaseRecord](ctx, e.store, e.keys.LeaseIn(e.keys.Sharded, run, step, attempt), e.keys.LeaseIn(!e.keys.Sharded, run, step, attempt))
}

// runCursorPrefix marks a run listing cursor of the merged listing: the
// id of the last run the previous page examined. Run ids sort the same in
// every shard, so "after this id" is a position in all of them at once,
// and the cursor stays short however many shards there are. A cursor
// without it is a store page token of the flat listing (from an engine
// before the sharded layout).
const runCursorPrefix = "after:"

// keyIn is where l lives: where it was read, else its key in the layout k
// writes.
func (l *leaseRecord) keyIn(k keys.Layout) string {
	if l.key != "" {
		return l.key
	}
	return k.Lease(l.Run, l.Step, l.Attempt)
}

// row is r's row in a listing, and whether it passes the filters.
func (req ListRequest) row(r *runRecord) (RunRow, bool) {
	if req.Workflow != "" && r.Workflow != req.Workflow || req.Status != "" && r.Status != req.Status ||
		req.Correlation != "" && r.Correlation != req.Correlation {
		return RunRow{}, false
	}
	s := cairn.RunSummary{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Status: r.Status, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt, StepsTotal: len(r.Steps), Error: r.Error}
	for _, st := range r.Steps {
		if st.Status.Settled() {
			s.StepsDone++
		}
	}
	return RunRow{RunSummary: s, Correlation: r.Correlation, CostUSD: r.Usage.CostUSD, Priority: r.Priority}, true
}

// listRunRowsMerged is ListRunRows over the sharded layout: newest first
// across the flat listing and the 16 shards, after the run id `after`.
// The cursor is the id of the last run examined, so a page of a filtered
// listing that examined listScanPages batches without filling up is
// short and has a cursor, as with the flat layout.
func (e *Engine) listRunRowsMerged(ctx context.Context, req ListRequest, after string) ([]RunRow, string, error) {
	if after != "" && !keys.RunID.Valid(after) {
		return nil, "", cairn.ValidationError{{Field: "cursor", Message: "not a cursor this listing returned"}}
	}
	var out []RunRow
	more := false
	for pages := 0; pages < listScanPages && len(out) < req.Limit; pages++ {
		keys, m, err := e.scan.RunKeys(ctx, after, req.Limit-len(out))
		if err != nil {
			return nil, "", err
		}
		more = m
		if len(keys) > 0 {
			key := keys[len(keys)-1]
			after = key[strings.LastIndexByte(key, '/')+1:]
		}
		rows, err := e.listedRows(ctx, req, keys)
		if err != nil {
			return nil, "", err
		}
		out = append(out, rows...)
		if !more {
			break
		}
	}
	if !more {
		return out, "", nil
	}
	return out, keys.EncodeCursor(runCursorPrefix + after), nil
}
