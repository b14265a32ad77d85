package hub

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/notify"
)

// Priorities. A run has a priority (StartRequest.Priority, in
// [cairn.MinPriority, cairn.MaxPriority], default 0) and a task step may
// override it (Step.Priority). Every hint of a ready attempt carries its
// step's effective priority, and an instance's hub hands out the hints of
// highest effective priority first:
//
//	effective = priority + ⌊waited / PriorityAging⌋
//
// where waited is how long the attempt has been claimable in this hub
// (since its first hint here, or its not-before). Ordering by effective
// priority is ordering by ready time − priority × aging, so an attempt is
// never passed by one that became ready more than (q − p) × aging after
// it (p its priority, q the other's): with the default aging (1 s) and the
// range of 200 points, a step of the lowest priority is passed only by
// steps that became ready in the 200 s after it. Starvation is bounded.
//
// The order holds within one instance's hub: on a fan-out bus every
// instance sees every hint and orders them alike; on a queue bus each
// instance orders its share. Nothing is written for priorities: the cost
// is 0 requests, and ~20 bytes per hint on the bus.

// prio is the hub's priority state.
type prio struct {
	aging time.Duration
	// prioritized is set once a hint with a priority arrived: from then
	// on take orders by effective priority (before, the cheaper random
	// order: every effective priority is its age alone).
	prioritized bool
	since       map[string]sinceEntry // hint key → when its attempt first came
}

type sinceEntry struct {
	attempt int
	at      time.Time
}

// noteLocked records when the attempt of hint x (key k) first reached the
// hub: a hint put back after a claim could not use it keeps its age.
func (h *Hub) noteLocked(k string, x notify.Hint) {
	if x.Priority != 0 {
		h.prioritized = true
	}
	if !h.prioritized {
		return
	}
	if h.since == nil {
		h.since = map[string]sinceEntry{}
	}
	if s, ok := h.since[k]; ok && s.attempt == x.Attempt {
		return
	}
	if len(h.since) > 2*len(h.hints)+1024 {
		for sk := range h.since {
			if _, ok := h.hints[sk]; !ok {
				delete(h.since, sk)
			}
		}
	}
	h.since[k] = sinceEntry{attempt: x.Attempt, at: h.now()}
}

func (h *Hub) effective(k string, x hubHint, now time.Time) int64 {
	since := x.added
	if s, ok := h.since[k]; ok && s.attempt == x.Attempt && s.at.Before(since) {
		since = s.at
	}
	if x.NotBefore.After(since) {
		since = x.NotBefore
	}
	aging := h.aging
	if aging <= 0 {
		aging = time.Second
	}
	return int64(x.Priority) + int64(now.Sub(since)/aging)
}

// takeByPriorityLocked is take when priorities are in use: the n due
// matching hints of highest effective priority, ties in random order.
func (h *Hub) takeByPriorityLocked(match func(notify.Hint) bool, n int, now time.Time) ([]notify.Hint, []time.Time) {
	type cand struct {
		k   string
		eff int64
		tie uint32
	}
	var cs []cand
	for k, x := range h.hints {
		if x.NotBefore.After(now) || !match(x.Hint) {
			continue
		}
		cs = append(cs, cand{k: k, eff: h.effective(k, x, now), tie: rand.Uint32()})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.eff != b.eff {
			if a.eff > b.eff {
				return -1
			}
			return 1
		}
		if a.tie < b.tie {
			return -1
		}
		if a.tie > b.tie {
			return 1
		}
		return 0
	})
	var out []notify.Hint
	var due []time.Time
	for _, c := range cs {
		if len(out) == n {
			break
		}
		x := h.hints[c.k]
		out = append(out, x.Hint)
		d := x.added
		if x.NotBefore.After(d) {
			d = x.NotBefore
		}
		due = append(due, d)
		delete(h.hints, c.k)
	}
	if len(h.order) > 2*len(h.hints)+64 {
		h.compactLocked(false)
	}
	return out, due
}

// Highest returns the highest effective priority among the due hints
// that match, and false when there is none or the hub does not order by
// priority (no hint had one): what an attempt given out without the hub
// (an inline lease, engine/inline.go) must not be passed over for.
func (h *Hub) Highest(match func(notify.Hint) bool) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.prioritized {
		return 0, false
	}
	now := h.now()
	var best int64
	found := false
	for k, x := range h.hints {
		if x.NotBefore.After(now) || !match(x.Hint) {
			continue
		}
		if eff := h.effective(k, x, now); !found || eff > best {
			best, found = eff, true
		}
	}
	return best, found
}
