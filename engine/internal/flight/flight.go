// Package flight shares one read among the callers that ask for the same
// key while it is in flight (golang.org/x/sync/singleflight), run without
// any one caller's cancellation, since the others wait on it, and bounded
// by a timeout of its own. Each caller still stops waiting when its own
// context ends.
package flight

import (
	"context"
	"time"

	"golang.org/x/sync/singleflight"
)

// Group shares reads by key. The zero value is ready; Timeout bounds a
// shared read (0: no bound of its own).
type Group[T any] struct {
	Timeout time.Duration
	g       singleflight.Group
}

// Do returns read's result for key: the one in flight, or a new one.
// shared reports whether other callers got the same result.
func (f *Group[T]) Do(ctx context.Context, key string, read func(context.Context) (T, error)) (v T, shared bool, err error) {
	ch := f.g.DoChan(key, func() (any, error) {
		rctx := context.WithoutCancel(ctx)
		if f.Timeout > 0 {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(rctx, f.Timeout)
			defer cancel()
		}
		return read(rctx)
	})
	select {
	case r := <-ch:
		v, _ = r.Val.(T)
		return v, r.Shared, r.Err
	case <-ctx.Done():
		return v, false, ctx.Err()
	}
}
