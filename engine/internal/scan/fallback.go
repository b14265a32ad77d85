package scan

import (
	"context"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/notify"
)

// Fallback-scan sizes.
const (
	// Runs is how many runs one fallback scan reads.
	Runs = 16
	// Page is how many timer keys one fallback scan lists (per listing):
	// one LIST request, the most S3 returns in one.
	Page = 1000
	// LeaseReads is how many lease reads one run's scan makes at once.
	LeaseReads = 32
)

// Fallback is one instance's fallback scan: it looks in the bucket for
// claimable work whose notification may have been lost. It lists the
// first page of the timer index (every run with ready or leased steps has
// a timer due within ActiveCheckInterval, or overdue; a new run's may be
// a group timer that lists it: one GET each), reads up to Runs of
// those runs, and adds a hint for each ready attempt that has no lease.
//
// Each scan reads the runs after the last one the previous scan read (in
// the index's order: due time, then name), wrapping around, so successive
// scans cover every run the page holds. Reading the first Runs runs every
// time found nothing while they were busy (leased steps, the oldest
// timers): a step made ready behind them — by an event on an instance
// where no claim waited, or by a sleep the reaper fired, whose hints
// reach no other instance without a bus — waited until the reaper's
// visits had moved every run ahead of it to the back of the index, which
// under load took minutes (TestFallbackScanFindsReadyWorkBehindABacklog).
type Fallback struct {
	Lister   Lister
	Rotation *Rotation // where this instance's scans are
	Host     FallbackHost
}

// FallbackHost is what a fallback scan asks of the engine.
type FallbackHost struct {
	Now func() time.Time
	// Failed is told a listing failed (the store outage's log).
	Failed func(what string, err error)
	// Ready reads run and returns the attempts a claim may be offered,
	// with where each one's lease object is and its step's priority; no
	// hints when the run cannot be read or is not running.
	Ready func(ctx context.Context, run string, now time.Time) (hints []notify.Hint, lease func(notify.Hint) string, priority func(step string) int)
	// Held reports whether this instance holds h already (not lost).
	Held func(h notify.Hint) bool
	// Unleased reports whether no claimer holds the lease at key.
	Unleased func(ctx context.Context, key string) bool
	// Add hands a hint found to the instance's claims.
	Add func(h notify.Hint)
	// Expand replaces the group timers among timers by the runs they
	// list (timer.Index.Expand), in listing order; with an error, those it
	// could not read are left out.
	Expand func(ctx context.Context, timers []Timer) ([]Timer, error)
}

// Scan runs one scan when one is due (every apart), reading the runs
// whose first timer is due by now+lead. It returns the hints added.
func (f *Fallback) Scan(ctx context.Context, every, lead time.Duration) int {
	after, ok := f.Rotation.Begin(f.Host.Now(), every)
	if !ok {
		return 0
	}
	timerKeys, err := f.Lister.FirstTimers(ctx, Page)
	if err != nil {
		f.Host.Failed("list timers", err)
		return 0
	}
	now := f.Host.Now()
	timers := Parse(f.Lister.Keys, timerKeys, now.Add(lead))
	if f.Host.Expand != nil {
		if timers, err = f.Host.Expand(ctx, timers); err != nil {
			f.Host.Failed("read group timers", err)
		}
	}
	runs := Order(timers, after)
	runs = f.Rotation.Pick(runs, after, Runs)
	added := 0
	for _, t := range runs {
		hints, lease, priority := f.Host.Ready(ctx, t.Name, now)
		// The leases of the ready attempts, looked up concurrently (a
		// wide fan-out has thousands).
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, LeaseReads)
		for _, h := range hints {
			if f.Host.Held(h) {
				// Not lost: held here, perhaps deferred by flow control
				// (NotBefore) or parked until a slot frees. A fresh hint
				// would make it claimable at once, for a claim the limit
				// refuses again.
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if f.Host.Unleased(ctx, lease(h)) {
					h.Priority = priority(h.Step)
					f.Host.Add(h)
					mu.Lock()
					added++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return added
}
