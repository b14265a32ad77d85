// Package progress is one instance's side of progress streams: the bounds
// on a lease's progress messages (size, rate), the leases this instance
// proved by a read, and the fan-out of messages to the streams watching a
// run. Nothing here is stored: a progress message lives in memory and on
// the bus, and a watcher that is not connected when it passes misses it.
package progress

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/notify"
)

// The bounds of progress.
const (
	// MaxValueBytes bounds one progress value (its JSON).
	MaxValueBytes = 16 << 10
	// DefaultRate is how many messages a second one lease may send, with
	// a burst of DefaultBurst; more are refused (429 with Retry-After).
	DefaultRate  = 50
	DefaultBurst = 20
	// maxLeases bounds the leases tracked (rate, proof): beyond it the
	// least recently used are forgotten (a forgotten lease is read again,
	// once, and starts with a full burst).
	maxLeases = 10_000
	// SubBuffer is how many messages a watcher may fall behind; beyond,
	// its messages are dropped and counted (Sub.Missed).
	SubBuffer = 256
)

// RateError refuses a message over its lease's rate.
type RateError struct {
	// RetryAfter is when the next message would be accepted.
	RetryAfter time.Duration
}

func (e *RateError) Error() string {
	return fmt.Sprintf("progress: over %d messages a second for this lease; retry after %v", DefaultRate, e.RetryAfter.Round(time.Millisecond))
}

// Hub is one instance's progress: per-lease bounds and the watchers of
// each run.
type Hub struct {
	origin string
	now    func() time.Time
	rate   float64
	burst  float64
	seq    atomic.Uint64

	mu     sync.Mutex
	leases map[string]*leaseState
	subs   map[string]map[*Sub]struct{} // by run
}

type leaseState struct {
	tokens float64
	last   time.Time
	proven bool
}

// New returns a hub on the clock now admitting rate messages a second per
// lease (0: DefaultRate) with a burst of burst (0: DefaultBurst).
func New(now func() time.Time, rate float64, burst int) *Hub {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if rate <= 0 {
		rate = DefaultRate
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	return &Hub{origin: hex.EncodeToString(b[:]), now: now, rate: rate, burst: float64(burst),
		leases: map[string]*leaseState{}, subs: map[string]map[*Sub]struct{}{}}
}

// Admit charges one message to lease's rate, refusing it with a
// *RateError when the lease is over. It reports whether a read on this
// instance proved the lease (Prove).
func (h *Hub) Admit(lease string) (proven bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	s := h.leases[lease]
	if s == nil {
		if len(h.leases) >= maxLeases {
			h.pruneLocked()
		}
		s = &leaseState{tokens: h.burst, last: now}
		h.leases[lease] = s
	}
	s.tokens = min(h.burst, s.tokens+now.Sub(s.last).Seconds()*h.rate)
	s.last = now
	if s.tokens < 1 {
		wait := time.Duration((1 - s.tokens) / h.rate * float64(time.Second))
		return s.proven, &RateError{RetryAfter: wait}
	}
	s.tokens--
	return s.proven, nil
}

// pruneLocked forgets the half of the tracked leases idle longest.
func (h *Hub) pruneLocked() {
	var total time.Duration
	now := h.now()
	for _, s := range h.leases {
		total += now.Sub(s.last)
	}
	mean := total / time.Duration(len(h.leases))
	for k, s := range h.leases {
		if now.Sub(s.last) >= mean {
			delete(h.leases, k)
		}
	}
}

// Prove records that a read of lease on this instance found it live: its
// later messages are admitted without a read.
func (h *Hub) Prove(lease string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.leases[lease]; s != nil {
		s.proven = true
	}
}

// Forget drops what is known of lease (it was found ended).
func (h *Hub) Forget(lease string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.leases, lease)
}

// Accepted stamps p as accepted by this instance, delivers it to this
// instance's watchers, and returns it for the other instances.
func (h *Hub) Accepted(p notify.Progress) notify.Progress {
	p.Origin, p.Seq = h.origin, h.seq.Add(1)
	h.deliver(p)
	return p
}

// Deliver hands p, received from the bus, to this instance's watchers of
// its run, unless this instance accepted it (and delivered it then).
func (h *Hub) Deliver(p notify.Progress) {
	if p.Origin == h.origin {
		return
	}
	h.deliver(p)
}

func (h *Hub) deliver(p notify.Progress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[p.Run] {
		select {
		case s.c <- p:
		default:
			s.missed.Add(1)
		}
	}
}

// Sub is one watcher of a run's progress.
type Sub struct {
	c      chan notify.Progress
	missed atomic.Int64
}

// C delivers the run's progress messages in the order this instance
// received them.
func (s *Sub) C() <-chan notify.Progress { return s.c }

// Missed returns, and resets, how many messages were dropped because the
// watcher fell SubBuffer behind.
func (s *Sub) Missed() int { return int(s.missed.Swap(0)) }

// Subscribe adds a watcher of run's progress; stop removes it.
func (h *Hub) Subscribe(run string) (*Sub, func()) {
	s := &Sub{c: make(chan notify.Progress, SubBuffer)}
	h.mu.Lock()
	if h.subs[run] == nil {
		h.subs[run] = map[*Sub]struct{}{}
	}
	h.subs[run][s] = struct{}{}
	h.mu.Unlock()
	return s, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[run], s)
		if len(h.subs[run]) == 0 {
			delete(h.subs, run)
		}
	}
}
