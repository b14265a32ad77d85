package engine

import (
	"context"
	"fmt"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/list"
	"github.com/cairn-dev/cairn/engine/internal/object"
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

// getEither reads key, and when it is not found, other (the same object
// in the other layout).
var getEither = object.GetEither

// readLeaseAt reads the lease of (run, step, attempt) in either layout and
// returns the key it was found at.
func (e *Engine) readLeaseAt(ctx context.Context, run, step string, attempt int) (*leaseRecord, blob.Version, string, error) {
	return object.ReadEither[leaseRecord](ctx, e.store, e.keys.LeaseIn(e.keys.Sharded, run, step, attempt), e.keys.LeaseIn(!e.keys.Sharded, run, step, attempt))
}

// runCursorPrefix marks a run listing cursor of the merged listing
// (engine/internal/list).
const runCursorPrefix = list.CursorMark
