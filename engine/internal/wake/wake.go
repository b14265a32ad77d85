// Package wake keeps an instance's own wakes: the exact due times of the
// run timers it wrote, in memory, earliest first, so that the instance
// visits a run at the instant it is due instead of at the next reaper
// pass that lists its timer key. Only a shortcut: the timer objects stay
// the durable record.
package wake

import (
	"container/heap"
	"sync"
	"time"
)

// Max bounds the wakes a Set keeps; beyond it the latest are dropped (the
// timer index still fires them).
const Max = 100_000

type entry struct {
	at  time.Time
	run string
}

type entries []entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h entries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *entries) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Set is the own wakes of one instance. It records nothing until Start
// (or Next): an engine nobody drives keeps nothing. The zero Set is ready.
type Set struct {
	mu      sync.Mutex
	on      bool
	h       entries
	set     map[entry]bool // the heap's entries, to keep one per (run, at)
	changed chan struct{}  // closed when an earlier wake is added
}

// Start turns recording on.
func (s *Set) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
}

func (s *Set) startLocked() {
	if !s.on {
		s.on, s.set, s.changed = true, map[entry]bool{}, make(chan struct{})
	}
}

// Add records that run is due at at, when recording.
func (s *Set) Add(run string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on || at.IsZero() {
		return
	}
	k := entry{at: at, run: run}
	if s.set[k] || len(s.h) >= Max {
		return
	}
	s.set[k] = true
	heap.Push(&s.h, k)
	if s.h[0] == k {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// Next returns how long after now the earliest wake is due (0 when it is;
// ok false when there is none) and a channel closed when an earlier one is
// added. It starts recording.
func (s *Set) Next(now time.Time) (in time.Duration, ok bool, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
	if len(s.h) == 0 {
		return 0, false, s.changed
	}
	return max(s.h[0].at.Sub(now), 0), true, s.changed
}

// Due removes and returns the runs with a wake due at now, each once, in
// due order.
func (s *Set) Due(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var runs []string
	seen := map[string]bool{}
	for len(s.h) > 0 && !s.h[0].at.After(now) {
		k := heap.Pop(&s.h).(entry)
		delete(s.set, k)
		if !seen[k.run] {
			seen[k.run] = true
			runs = append(runs, k.run)
		}
	}
	return runs
}
