// Package ctxsleep waits a while unless a context ends first: the one
// timer-and-select loop the drivers, their fault injectors and the command
// line back off with.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d and returns nil, or returns ctx.Err() once ctx ends first.
// A d of zero or less returns nil at once, whatever ctx.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
