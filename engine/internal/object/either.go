package object

import (
	"context"
	"errors"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/par"
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

// DeleteAll deletes keys, eight at a time, and returns their failures
// joined (a key already gone is not one).
func DeleteAll(ctx context.Context, b *blob.Bucket, keys []string) error {
	errs := make([]error, len(keys))
	par.Each(8, len(keys), func(i int) {
		if err := b.Delete(ctx, keys[i]); err != nil && !errors.Is(err, blob.ErrNotFound) {
			errs[i] = err
		}
	})
	return errors.Join(errs...)
}
