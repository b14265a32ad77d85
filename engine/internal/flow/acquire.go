package flow

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/notify"
)

// Claim is a claim about to create an attempt's lease, as flow control
// sees it.
type Claim struct {
	Step   string
	Vars   render.Vars // the claim's, for the keys
	Holder Holder      // the attempt
	At     time.Time   // when it claims: the rate limit's clock
	Hint   notify.Hint // the hint it took
	// Claimed reports whether another claim already created the
	// attempt's lease.
	Claimed func(ctx context.Context) (bool, error)
	// GiveBack releases the slots taken so far (TakeAll).
	GiveBack func(taken []string)
}

// RenderError: a key of the step's flow control did not render (which
// fails the step).
type RenderError struct{ Err error }

func (e *RenderError) Error() string { return e.Err.Error() }
func (e *RenderError) Unwrap() error { return e.Err }

// Acquire applies a step's flow control (sf) to claim c: the rate limit,
// then every concurrency limit. It returns ok when the claim may create
// the lease, with the slots it took; otherwise back (when not nil) is the
// hint to put back, delayed until the attempt may be claimable. A key
// that does not render is a *RenderError.
func (t *Table) Acquire(ctx context.Context, sf *Step, c Claim) (ok bool, taken []string, back *notify.Hint, err error) {
	slots, rateKey, err := t.Wants(sf, c.Step, c.Vars)
	if err != nil {
		return false, nil, nil, &RenderError{err}
	}
	h := c.Hint
	if rl := sf.Rate; rl != nil {
		// A grant is spent whatever follows, so do not spend one on an
		// attempt another claim already won.
		if claimed, err := c.Claimed(ctx); err != nil || claimed {
			return false, nil, nil, err
		}
		granted, at, err := t.TakeRate(ctx, rl, rateKey, c.At)
		if err != nil {
			return false, nil, nil, err
		}
		if !granted {
			h.NotBefore = at
			return false, nil, &h, nil
		}
	}
	taken, err = t.TakeAll(ctx, slots, c.Holder, &h, c.GiveBack)
	if err != nil {
		return false, taken, nil, err
	}
	if taken == nil && len(slots) > 0 {
		return false, nil, &h, nil
	}
	return true, taken, nil, nil
}

// ReleaseAll removes the holders is matches (one attempt) from the limit
// objects at keys, and hands the hints parked on those keys to wake, due
// now. A release that fails is told to warn: the slot is recovered once
// the holder is seen stale.
func (t *Table) ReleaseAll(ctx context.Context, keys []string, is func(Holder) bool, warn func(error), wake func(notify.Hint)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, key := range keys {
		if err := t.Release(ctx, key, is); err != nil {
			warn(err)
		}
		for _, h := range t.Unpark(key) {
			h.NotBefore = time.Time{}
			wake(h)
		}
	}
}
