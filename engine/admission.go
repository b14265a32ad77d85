package engine

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
)

// Admission control: an instance sheds new runs while the store is
// refusing its writes for rate.
//
// A store past its capacity (a GCS bucket still ramping, an S3 prefix not
// yet split) refuses some of every kind of write: the steps of runs already
// going and the starts of new ones alike. Admitting every start then
// spends the capacity the running steps need on runs that cannot advance
// either, and every run slows down together (the simulator measured it:
// more runs started, fewer steps completed, hundreds of requests a step).
// So StartRun refuses a share of new runs with the answer a refusal of the
// store gets (503 with Retry-After: nothing was written; the SDKs retry
// it), before it makes any request, and the runs already going get the
// capacity.
//
// The share is adaptive throttling as in Google's SRE book (chapter
// "Handling Overload"): over the last admissionWindow, with R the writes
// this instance sent to the store and A those the store accepted (not
// refused for rate), a start is refused with probability
// max(0, (R − K·A) / (R + 1)). K = 1 / (1 − ShedAbove): nothing is shed
// while at most ShedAbove of the writes were refused, and the share grows
// with the refusals beyond it. It needs no knowledge of the store's
// capacity, works the same on one instance or on a thousand Lambda
// environments (each decides from its own writes), and stops shedding as
// soon as the refusals stop (the window slides by the second).

// DefaultShedAbove is the share of refused writes above which starts are
// shed.
const DefaultShedAbove = 0.1

// admissionWindow is how far back the write outcomes count.
const admissionWindow = 30 * time.Second

// admissionMinWrites is how many writes the window must hold before
// anything is shed: a handful of refusals on an idle instance is noise.
const admissionMinWrites = 20

// errShed is the cause of a start refused by admission control.
var errShed = errors.New("new runs are shed: the store is refusing this instance's writes for rate (admission control)")

type admission struct {
	k  float64 // 0: off
	mu sync.Mutex
	// sec[i] counts the writes of the second secs[i] (unix seconds), a
	// ring of admissionWindow seconds.
	secs     [30]int64
	req, acc [30]int64
	logged   time.Time // the last warning of shedding
}

func newAdmission(shedAbove float64) *admission {
	a := &admission{}
	if shedAbove > 0 && shedAbove < 1 {
		a.k = 1 / (1 - shedAbove)
	}
	return a
}

// wrote records a write's outcome: err nil (accepted), a refusal for
// rate (blob.ErrThrottled), or anything else (not counted: a conflict or
// a lost connection says nothing of the store's capacity).
func (a *admission) wrote(now time.Time, err error) {
	if a.k == 0 {
		return
	}
	throttled := errors.Is(err, blob.ErrThrottled)
	if err != nil && !throttled {
		return
	}
	s := now.Unix()
	i := int(uint64(s) % uint64(len(a.secs)))
	a.mu.Lock()
	if a.secs[i] != s {
		a.secs[i], a.req[i], a.acc[i] = s, 0, 0
	}
	a.req[i]++
	if !throttled {
		a.acc[i]++
	}
	a.mu.Unlock()
}

// shedProbability is the share of starts to refuse now.
func (a *admission) shedProbability(now time.Time) float64 {
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
	if r < admissionMinWrites {
		return 0
	}
	return max(0, (float64(r)-a.k*float64(acc))/float64(r+1))
}

// shed reports whether to refuse a start now.
func (a *admission) shed(now time.Time) bool {
	p := a.shedProbability(now)
	return p > 0 && rand.Float64() < p
}

// noteShed returns the share being shed and whether to log it: at most
// one warning every 10 s per instance.
func (a *admission) noteShed(now time.Time) (float64, bool) {
	p := a.shedProbability(now)
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.logged) < 10*time.Second && !now.Before(a.logged) {
		return p, false
	}
	a.logged = now
	return p, true
}
