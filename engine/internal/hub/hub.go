// Package hub is one instance's pool of work hints and the claims waiting
// for them, handed out in order of effective priority.
package hub

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/notify"
)

// Hub is one instance's pool of hints and the claims waiting for them.
// Each hint goes to one claim (queue semantics within an instance); a
// claim that cannot use a hint puts it back. Hints are bounded in number
// and age: a dropped hint is found again by the fallback scan or the
// reaper.
type Hub struct {
	now func() time.Time

	mu      sync.Mutex
	hints   map[string]hubHint // by run/step: the newest attempt wins
	order   []string           // arrival order of keys (may hold stale keys)
	waiters map[*waiter]struct{}
	// changed is closed (and replaced) whenever the set of waiters
	// changes: the signal HeldClaims' watchers wait on.
	changed chan struct{}
	adds    int
	// dropped, when set, hears of hints pruned for age or number (a
	// dropped hint is found again by the fallback scan or the reaper).
	dropped func(n int)

	prio // priorities (priority.go)
}

type hubHint struct {
	notify.Hint
	added time.Time
}

type waiter struct {
	match func(notify.Hint) bool
	ch    chan struct{}
}

// The bounds of the pool: hints beyond maxHints, the oldest first, and
// hints older than MaxAge are pruned.
const (
	maxHints = 100_000
	MaxAge   = 10 * time.Minute
)

// New returns an empty hub on the clock now. aging is how long a hint
// waits to gain a point of effective priority (0: a second; priority.go);
// dropped, when not nil, hears of hints pruned for age or number.
func New(now func() time.Time, aging time.Duration, dropped func(n int)) *Hub {
	h := &Hub{now: now, hints: map[string]hubHint{}, waiters: map[*waiter]struct{}{}, changed: make(chan struct{}), dropped: dropped}
	h.aging = aging
	return h
}

// Holds reports whether the hub holds a hint for x's step and attempt (or
// a later one), claimable now or later (NotBefore).
func (h *Hub) Holds(x notify.Hint) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, ok := h.hints[x.Key()]
	return ok && cur.Attempt >= x.Attempt
}

// Add records a hint and wakes the claims it matches.
func (h *Hub) Add(x notify.Hint) {
	if !x.Work() {
		return // a run-change or registration notice, never claimable work
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := x.Key()
	if x.Kind() == notify.KindTaken {
		if cur, ok := h.hints[k]; ok && cur.Attempt <= x.Attempt {
			delete(h.hints, k)
		}
		return
	}
	if cur, ok := h.hints[k]; ok && cur.Attempt > x.Attempt {
		return // stale
	}
	if _, ok := h.hints[k]; !ok {
		h.order = append(h.order, k)
	}
	h.hints[k] = hubHint{Hint: x, added: h.now()}
	h.noteLocked(k, x)
	h.adds++
	if len(h.hints) > maxHints || h.adds%4096 == 0 {
		h.compactLocked(true)
	}
	if delay := x.NotBefore.Sub(h.now()); delay > 0 {
		// Wake the claims waiting when the hint becomes due, not those
		// waiting now: a claim sent after a retryable fail, during the
		// backoff, must hear of the retry as soon as it is claimable.
		time.AfterFunc(delay, func() { h.wake(x) })
		return
	}
	h.wakeLocked(x)
}

// WakeDue wakes the claims waiting for the hints due now. After the
// clock jumped forward (a test clock), a hint's wake-up, timed in real
// time, would come late.
func (h *Hub) WakeDue() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for _, x := range h.hints {
		if !x.NotBefore.After(now) {
			h.wakeLocked(x.Hint)
		}
	}
}

// wake notifies the claims now waiting that match x.
func (h *Hub) wake(x notify.Hint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wakeLocked(x)
}

func (h *Hub) wakeLocked(x notify.Hint) {
	for w := range h.waiters {
		if w.match(x) {
			signal(w.ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Take removes and returns up to n due hints that match.
func (h *Hub) Take(match func(notify.Hint) bool, n int) []notify.Hint {
	out, _ := h.TakeDue(match, n)
	return out
}

// TakeDue is Take, with when each hint became claimable here: when it
// arrived, or its NotBefore if later (the start of its wake latency).
func (h *Hub) TakeDue(match func(notify.Hint) bool, n int) ([]notify.Hint, []time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if h.prioritized {
		return h.takeByPriorityLocked(match, n, now)
	}
	var out []notify.Hint
	var due []time.Time
	// Start at a random place: claims on other instances hold the same
	// hints (fan-out buses), and taking them in the same order would make
	// every instance race for the same attempts.
	start := 0
	if len(h.order) > 1 {
		start = rand.IntN(len(h.order))
	}
	for i := range h.order {
		k := h.order[(start+i)%len(h.order)]
		if len(out) == n {
			break
		}
		x, ok := h.hints[k]
		if !ok || x.NotBefore.After(now) || !match(x.Hint) {
			continue
		}
		out = append(out, x.Hint)
		d := x.added
		if x.NotBefore.After(d) {
			d = x.NotBefore
		}
		due = append(due, d)
		delete(h.hints, k)
	}
	if len(h.order) > 2*len(h.hints)+64 {
		h.compactLocked(false)
	}
	return out, due
}

// compactLocked drops keys of taken hints from the order, and with prune
// the oldest hints beyond the bounds.
func (h *Hub) compactLocked(prune bool) {
	now := h.now()
	order := h.order[:0]
	for _, k := range h.order {
		x, ok := h.hints[k]
		if !ok {
			continue
		}
		if prune && (now.Sub(x.added) > MaxAge || len(h.hints) > maxHints) {
			delete(h.hints, k)
			if h.dropped != nil {
				h.dropped(1)
			}
			continue
		}
		order = append(order, k)
	}
	h.order = order
}

// Wait signals ch (buffered; the caller may signal it too: Signal) when a
// matching hint arrives, and returns the function to stop waiting.
func (h *Hub) Wait(match func(notify.Hint) bool, ch chan struct{}) func() {
	w := &waiter{match: match, ch: ch}
	h.mu.Lock()
	h.waiters[w] = struct{}{}
	h.changedLocked()
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.waiters, w)
		h.changedLocked()
		h.mu.Unlock()
	}
}

// Signal wakes a waiter on ch (Wait) without a hint.
func Signal(ch chan struct{}) { signal(ch) }

// Size is the number of hints held.
func (h *Hub) Size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.hints)
}

// changedLocked signals that the set of waiting claims changed.
func (h *Hub) changedLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Held returns the number of claims waiting now and a channel closed at
// the next change.
func (h *Hub) Held() (int, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters), h.changed
}
