// Package object reads and writes the JSON objects the engine keeps in
// its bucket (records changed by compare-and-swap: run records,
// schedules, batches).
//
// Its codec is encoding/json's API and behaviour on the implementation of
// encoding/json/v2 (github.com/go-json-experiment/json/v1, the mirror of
// the standard library's v2, which aliases it once the standard library
// enables it by default): the same bytes, decoded 1.7 and encoded 1.3
// times as fast as by encoding/json (docs/DECISIONS.md 55.1). A run
// record is decoded and encoded on every commit, so its size is the
// cost of a step.
package object

import (
	"context"
	"fmt"

	json "github.com/go-json-experiment/json/v1"

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

// Decode decodes data into v.
func Decode(data []byte, v any) error { return json.Unmarshal(data, v) }

// JSON encodes v, which always encodes (a record type of the engine).
func JSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("engine: marshal %T: %v", v, err))
	}
	return b
}
