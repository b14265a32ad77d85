// Package throttle is the arithmetic of the engine's throttles: the
// adaptive shedding of new runs while the store refuses writes for rate
// (Adaptive), and the generic cell rate algorithm of rate limits (GCRA).
// Neither reads nor writes anything: the engine feeds them what it saw
// and stores what they compute.
package throttle

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Adaptive is adaptive throttling as in Google's SRE book (chapter
// "Handling Overload"): over the last Window, with R the writes an
// instance sent to the store and A those the store accepted (not refused
// for rate), a start is refused with probability
// max(0, (R − K·A) / (R + 1)). K = 1 / (1 − shedAbove): nothing is shed
// while at most shedAbove of the writes were refused, and the share grows
// with the refusals beyond it. It needs no knowledge of the store's
// capacity, works the same on one instance or on a thousand Lambda
// environments (each decides from its own writes), and stops shedding as
// soon as the refusals stop (the window slides by the second).
type Adaptive struct {
	k  float64 // 0: off
	mu sync.Mutex
	// sec[i] counts the writes of the second secs[i] (unix seconds), a
	// ring of Window seconds.
	secs     [30]int64
	req, acc [30]int64
	logged   time.Time // the last warning of shedding
}

// Window is how far back the write outcomes count.
const Window = 30 * time.Second

// MinWrites is how many writes the window must hold before anything is
// shed: a handful of refusals on an idle instance is noise.
const MinWrites = 20

// NewAdaptive returns the throttle that sheds once more than shedAbove of
// the writes were refused (off unless 0 < shedAbove < 1).
func NewAdaptive(shedAbove float64) *Adaptive {
	a := &Adaptive{}
	if shedAbove > 0 && shedAbove < 1 {
		a.k = 1 / (1 - shedAbove)
	}
	return a
}

// Wrote records the outcome of a write at now: accepted, or refused for
// rate.
func (a *Adaptive) Wrote(now time.Time, accepted bool) {
	if a.k == 0 {
		return
	}
	s := now.Unix()
	i := int(uint64(s) % uint64(len(a.secs)))
	a.mu.Lock()
	if a.secs[i] != s {
		a.secs[i], a.req[i], a.acc[i] = s, 0, 0
	}
	a.req[i]++
	if accepted {
		a.acc[i]++
	}
	a.mu.Unlock()
}

// Probability is the share of starts to refuse now.
func (a *Adaptive) Probability(now time.Time) float64 {
	if a.k == 0 {
		return 0
	}
	s := now.Unix()
	var r, acc int64
	a.mu.Lock()
	for i, at := range a.secs {
		if at > s-int64(len(a.secs)) && at <= s {
			r += a.req[i]
			acc += a.acc[i]
		}
	}
	a.mu.Unlock()
	if r < MinWrites {
		return 0
	}
	return max(0, (float64(r)-a.k*float64(acc))/float64(r+1))
}

// Shed reports whether to refuse a start now.
func (a *Adaptive) Shed(now time.Time) bool {
	p := a.Probability(now)
	return p > 0 && rand.Float64() < p
}

// NoteShed returns the share being shed and whether to log it: at most
// one warning every 10 s.
func (a *Adaptive) NoteShed(now time.Time) (float64, bool) {
	p := a.Probability(now)
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.logged) < 10*time.Second && !now.Before(a.logged) {
		return p, false
	}
	a.logged = now
	return p, true
}
