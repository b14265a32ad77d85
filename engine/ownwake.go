package engine

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Own wakes: an instance that runs the reaper in its own process (cairn
// dev, cairn serve --reap-every) also keeps, in memory, the exact due
// time of every run timer it writes, and visits the run at that instant
// instead of waiting for the next pass to list the timer key. The timer
// object stays the durable record — its key is rounded up to a whole
// keys.TimerBucket and written at least minTimerLead ahead, so a pass reading
// the index alone fires a due time up to keys.TimerBucket (or minTimerLead)
// plus the reaper's period late — and the pass that finds it later visits
// the run once more, finds nothing due, and deletes the key. The own wake
// is a shortcut, never the only copy: an instance that dies loses its
// wakes and the index fires them (the L2 bound of docs/ARCHITECTURE.md).
//
// Recording starts when a driver asks for the next wake (KeepOwnWakes):
// an engine nobody drives (a Lambda API instance, a test's engine) keeps
// nothing.

// maxOwnWakes bounds the wakes an instance keeps; beyond it the latest
// are dropped (the index still fires them).
const maxOwnWakes = 100_000

type ownWake struct {
	at  time.Time
	run string
}

type wakeHeap []ownWake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(ownWake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type ownWakes struct {
	mu      sync.Mutex
	on      bool
	h       wakeHeap
	set     map[ownWake]bool // the heap's entries, to keep one per (run, at)
	changed chan struct{}    // closed when an earlier wake is added
}

// KeepOwnWakes starts recording the due times of the run timers this
// instance writes (see NextOwnWake, VisitOwnWakes).
func (e *Engine) KeepOwnWakes() {
	w := &e.own
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startLocked()
}

// startLocked turns recording on (w.mu held).
func (w *ownWakes) startLocked() {
	if !w.on {
		w.on, w.set, w.changed = true, map[ownWake]bool{}, make(chan struct{})
	}
}

// ownWake records that run is due at at (engine clock), when recording.
func (e *Engine) ownWake(run string, at time.Time) {
	w := &e.own
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on || at.IsZero() {
		return
	}
	k := ownWake{at: at, run: run}
	if w.set[k] || len(w.h) >= maxOwnWakes {
		return
	}
	w.set[k] = true
	heap.Push(&w.h, k)
	if w.h[0] == k {
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

// NextOwnWake returns how long until the earliest own wake (ok false when
// there is none) and a channel closed when an earlier one is added.
func (e *Engine) NextOwnWake() (in time.Duration, ok bool, changed <-chan struct{}) {
	w := &e.own
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startLocked()
	if len(w.h) == 0 {
		return 0, false, w.changed
	}
	return max0(w.h[0].at.Sub(e.now())), true, w.changed
}

// VisitOwnWakes visits, as the reaper would, every run with an own wake
// now due, each once, reapParallel at a time. A visit that fails leaves
// the run to the timer index.
func (e *Engine) VisitOwnWakes(ctx context.Context) ReapStats {
	now := e.now()
	w := &e.own
	w.mu.Lock()
	var runs []string
	seen := map[string]bool{}
	for len(w.h) > 0 && !w.h[0].at.After(now) {
		k := heap.Pop(&w.h).(ownWake)
		delete(w.set, k)
		if !seen[k.run] {
			seen[k.run] = true
			runs = append(runs, k.run)
		}
	}
	w.mu.Unlock()
	var (
		stats ReapStats
		mu    sync.Mutex
		wg    sync.WaitGroup
		sem   = make(chan struct{}, reapParallel)
	)
	for _, run := range runs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			local := ReapStats{RunsVisited: 1}
			if err := e.reapRun(ctx, run, nil, e.now(), &local); err != nil {
				local.Errors++
				e.log.Debug("reaper: own wake's visit failed; the timer index fires it", "run", run, "err", err)
			}
			mu.Lock()
			stats.add(local)
			mu.Unlock()
		})
	}
	wg.Wait()
	return stats
}
