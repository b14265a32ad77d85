package object

import (
	"context"
	"errors"

	"github.com/cairn-dev/cairn/blob"
)

// ReadEither reads key, and when it is not found, other (the same object
// in the other key layout). It returns the key it read.
func ReadEither[T any](ctx context.Context, b *blob.Bucket, key, other string) (*T, blob.Version, string, error) {
	v, ver, err := Read[T](ctx, b, key)
	if errors.Is(err, blob.ErrNotFound) && other != key {
		v, ver, err = Read[T](ctx, b, other)
		return v, ver, other, err
	}
	return v, ver, key, err
}

// GetEither is ReadEither for raw objects.
func GetEither(ctx context.Context, b *blob.Bucket, key, other string) (*blob.Object, error) {
	o, err := b.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) && other != key {
		return b.Get(ctx, other)
	}
	return o, err
}
