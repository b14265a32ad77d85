// Package timer is the arithmetic and the objects of the timer index,
// timers/<due>/<name>: when a timer for a due time is written, whether an
// armed timer already fires a wake-up soon enough, and the puts and
// deletes of timer objects. Which wake-up a run needs is the engine's
// (nextWake); this package only writes and drops what it is told.
package timer

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/scan"
)

// Lead is how far ahead of now a timer is always written. The reaper
// deletes spent timers with unconditional deletes (stores have no
// portable conditional delete); writing new timers at least two buckets
// ahead keeps a fresh timer from ever landing on a key a concurrent reaper
// pass is about to delete, as long as instances' clocks agree within a
// second. A due time nearer than that is fired on time by the instance
// that armed it (own wakes, engine/ownwake.go) or by the claims that wait
// for it (retry backoffs are NotBefore hints); the index alone fires it
// within Lead plus the reaper's period.
const Lead = 2 * keys.TimerBucket

// Due is when a timer for due is written: never earlier than Lead from
// now, rounded up to a whole bucket. Up, never down: a key named for a
// time before the due time is listed by a pass that runs before it, finds
// nothing due, and re-arms the run one routine period later — an attempt
// timeout then fired a lease TTL late (TestTimerKeysNeverEarly).
func Due(due, now time.Time) time.Time {
	if min := now.Add(Lead); due.Before(min) {
		due = min
	}
	return CeilTo(due, keys.TimerBucket)
}

// CeilTo rounds t up to a multiple of d.
func CeilTo(t time.Time, d time.Duration) time.Time {
	if f := t.Truncate(d); f.Before(t) {
		return f.Add(d)
	}
	return t
}

// Covered reports whether the newest armed timer (armed; nil: none) fires
// a wake-up due at due soon enough: it is not spent, and a timer written
// for due now would not be earlier. A wake-up that is not covered needs a
// timer of its own, so a sleep, wait timeout, retry backoff or deadline
// that begins while the run already has a later timer fires within the
// reaper's period plus Lead; one that moves no wake-up earlier writes no
// timer.
func Covered(armed *time.Time, due, now time.Time) bool {
	return armed != nil && armed.After(now) && !Due(due, now).Before(*armed)
}

// Index writes and drops timer objects. Timer objects are small and
// idempotent; a stale one only costs the reaper a read.
type Index struct {
	Bucket *blob.Bucket
	Keys   keys.Layout
	// OrphanGrace is how long past its due time a timer whose run (or
	// batch) does not exist is kept. A start writes the run's timer first
	// and the record after (so no run ever exists without a timer); a
	// start that stalls between the two — a slow or throttled store, a
	// paused process — can find its timer due before its record exists.
	// Dropping that timer would leave the run, once created, with no
	// timer: with no bus (or its hint lost) neither the claims' fallback
	// scan (which reads the runs of the timer index) nor the reaper would
	// ever find its ready steps. A start is bounded by MaxRequestTime, so
	// the engine sets twice that: a timer that far past due with still no
	// record belongs to a start that died, and is dropped then. Until then
	// it costs one read per reaper pass.
	OrphanGrace time.Duration
}

// Put writes the timer named name at due (a bucket start, see Due) and
// returns its key.
func (x Index) Put(ctx context.Context, name string, due time.Time) (string, error) {
	key := x.Keys.Timer(due, name)
	_, err := x.Bucket.Put(ctx, key, []byte(`{"run":"`+name+`"}`), blob.WriteOptions{})
	return key, err
}

// Drop deletes timer keys, all but keep.
func (x Index) Drop(ctx context.Context, timerKeys []string, keep string) error {
	for _, k := range timerKeys {
		if k == keep {
			continue
		}
		if err := x.Bucket.Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return err
		}
	}
	return nil
}

// DropOrphans drops the due timers of a run or batch that does not exist,
// except those young enough to belong to a start still in flight (see
// OrphanGrace).
func (x Index) DropOrphans(ctx context.Context, timerKeys []string, now time.Time) error {
	old := make([]string, 0, len(timerKeys))
	for _, k := range timerKeys {
		if at, _, ok := x.Keys.ParseTimer(k); ok && now.Sub(at) < x.OrphanGrace {
			continue
		}
		old = append(old, k)
	}
	return x.Drop(ctx, old, "")
}

// Group groups due timers by the name they wake (trimPrefix removed: an
// ended run's retention timer wakes its run), in the order each name was
// first due, with each name's timer keys.
func Group(timers []scan.Timer, trimPrefix string) (order []string, due map[string][]string) {
	due = map[string][]string{}
	for _, t := range timers {
		name := strings.TrimPrefix(t.Name, trimPrefix)
		if _, seen := due[name]; !seen {
			order = append(order, name)
		}
		due[name] = append(due[name], t.Key)
	}
	return order, due
}
