package flow

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// Rate limits: the generic cell rate algorithm (throttle.GCRA) with one
// state object per key, ratelimits/<sha256(scope, key)>, changed only by
// compare-and-swap. The object holds tat, the theoretical arrival time of
// the next grant.
//
// Cost: one GET and one CAS per granted attempt (a create for a new key),
// one GET per refused look; a lost CAS race re-reads.

type rateObject struct {
	Scope string    `json:"scope"`
	Key   string    `json:"key"`
	TAT   time.Time `json:"tat"`
}

// TakeRate asks for one grant of rl under its key name at now (the
// claim's time, which its lease records as claimed_at). Refused, it
// returns when to ask again. Grants are applied in CAS order and each
// needs tat <= now + tau, so a claim whose now is stale is refused, never
// granted early: grant times are at least T apart (burst 1) whatever the
// claimers' order.
func (t *Table) TakeRate(ctx context.Context, rl *Rate, name string, now time.Time) (bool, time.Time, error) {
	key := t.keys.Rate(rl.Scope, name)
	g := throttle.GCRA{Limit: rl.Limit, Period: rl.Period, Burst: rl.Burst}
	for try := 0; try < casTries; try++ {
		obj, ver := &rateObject{Scope: rl.Scope, Key: clipKey(name)}, blob.Version("")
		o, err := t.bucket.Get(ctx, key)
		switch {
		case err == nil:
			if err := json.Unmarshal(o.Data, obj); err != nil {
				return false, time.Time{}, err
			}
			ver = o.Version
		case !errors.Is(err, blob.ErrNotFound):
			return false, time.Time{}, err
		}
		granted, tat := g.Take(obj.TAT, now)
		if !granted {
			return false, tat, nil
		}
		obj.TAT = tat
		data, err := json.Marshal(obj)
		if err != nil {
			return false, time.Time{}, err
		}
		if ver == "" {
			_, err = t.bucket.Create(ctx, key, data)
		} else {
			_, err = t.bucket.Swap(ctx, key, data, ver)
		}
		if err == nil {
			return true, time.Time{}, nil
		}
		if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrConflict) {
			throttle.Jitter(ctx, try/4)
			continue
		}
		// An unknown outcome may have spent the grant: never count it as
		// ours, so the rate holds either way.
		if !blob.IsRetryable(err) {
			return false, time.Time{}, err
		}
		throttle.Jitter(ctx, try)
	}
	return false, now.Add(g.Emission()), nil
}
