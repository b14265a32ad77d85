package engine

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn/blob"
)

// Rate limits: the generic cell rate algorithm (GCRA) with one state
// object per key, ratelimits/<sha256(scope, key)>, changed only by
// compare-and-swap.
//
// A rate of limit per period emits one grant every T = period/limit. The
// object holds tat, the theoretical arrival time of the next grant. A
// claim at now is granted when tat - now <= tau, where tau = (burst-1)*T,
// and then stores tat = max(tat, now) + T; otherwise it waits until
// tat - tau. With burst 1 (the default) grants are at least T apart, so
// any window of one period holds at most limit grants; a burst b lets b
// go at once, and a window then holds at most limit+b-1.
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
	t := rl.period / time.Duration(rl.limit)
	tau := t * time.Duration(rl.burst-1)
	for try := 0; try < slotCASTries; try++ {
		obj, ver, err := readJSON[rateObject](ctx, e.store, key)
		if isNotFound(err) {
			obj, ver, err = &rateObject{Scope: rl.scope, Key: clipKey(name)}, "", nil
		}
		if err != nil {
			return false, time.Time{}, err
		}
		tat := obj.TAT
		if tat.Before(now) {
			tat = now
		}
		if tat.Sub(now) > tau {
			return false, tat.Add(-tau), nil
		}
		obj.TAT = tat.Add(t)
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
	return false, now.Add(t), nil
}
