// Package object reads and writes the JSON objects the engine keeps in
// its bucket (records changed by compare-and-swap: schedules, batches).
package object

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// Read reads and decodes an object. An object that does not decode is
// errs.ErrCorrupt: reading it again does not help.
func Read[T any](ctx context.Context, b *blob.Bucket, key string) (*T, blob.Version, error) {
	o, err := b.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	v := new(T)
	if err := json.Unmarshal(o.Data, v); err != nil {
		return nil, "", fmt.Errorf("%s: %w: %w", key, errs.ErrCorrupt, err)
	}
	return v, o.Version, nil
}

// JSON encodes v, which always encodes (a record type of the engine).
func JSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("engine: marshal %T: %v", v, err))
	}
	return b
}
