package engine

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// Rate limits: the generic cell rate algorithm (GCRA, throttle.GCRA)
// with one state object per key, ratelimits/<sha256(scope, key)>, changed
// only by compare-and-swap. The object holds tat, the theoretical arrival
// time of the next grant.
//
// Cost: one GET and one CAS per granted attempt (a create for a new key),
// one GET per refused look; a lost CAS race re-reads.

type rateObject struct {
	Scope string    `json:"scope"`
	Key   string    `json:"key"`
	TAT   time.Time `json:"tat"`
}

// takeRate asks for one grant of rl under key at now (the claim's time,
// which its lease records as claimed_at). Refused, it returns when to ask
// again. Grants are applied in CAS order and each needs tat <= now + tau,
// so a claim whose now is stale is refused, never granted early: grant
// times are at least T apart (burst 1) whatever the claimers' order.
func (e *Engine) takeRate(ctx context.Context, rl *compiledRate, name string, now time.Time) (bool, time.Time, error) {
	key := e.keys.Rate(rl.scope, name)
	g := throttle.GCRA{Limit: rl.limit, Period: rl.period, Burst: rl.burst}
	for try := 0; try < slotCASTries; try++ {
		obj, ver, err := readJSON[rateObject](ctx, e.store, key)
		if isNotFound(err) {
			obj, ver, err = &rateObject{Scope: rl.scope, Key: clipKey(name)}, "", nil
		}
		if err != nil {
			return false, time.Time{}, err
		}
		granted, tat := g.Take(obj.TAT, now)
		if !granted {
			return false, tat, nil
		}
		obj.TAT = tat
		if ver == "" {
			_, err = e.store.Create(ctx, key, mustJSON(obj))
		} else {
			_, err = e.store.Swap(ctx, key, mustJSON(obj), ver)
		}
		if err == nil {
			return true, time.Time{}, nil
		}
		if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrConflict) {
			sleepJitter(ctx, try/4)
			continue
		}
		// An unknown outcome may have spent the grant: never count it as
		// ours, so the rate holds either way.
		if !blob.IsRetryable(err) {
			return false, time.Time{}, err
		}
		sleepJitter(ctx, try)
	}
	return false, now.Add(g.Emission()), nil
}
