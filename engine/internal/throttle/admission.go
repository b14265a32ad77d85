package throttle

import (
	"errors"
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
// The share is adaptive throttling over the last 30 s of this instance's
// writes (Adaptive): nothing is shed while at most ShedAbove of the
// writes were refused, and the share grows with the refusals beyond it.

// DefaultShedAbove is the share of refused writes above which starts are
// shed.
const DefaultShedAbove = 0.1

// ErrShed is the cause of a start refused by admission control.
var ErrShed = errors.New("new runs are shed: the store is refusing this instance's writes for rate (admission control)")

// Admission is an instance's admission control of new runs: Adaptive fed
// the outcomes of the instance's writes.
type Admission struct{ *Adaptive }

// NewAdmission returns admission control that sheds starts above
// shedAbove of the writes were refused (off unless 0 < shedAbove < 1).
func NewAdmission(shedAbove float64) *Admission {
	return &Admission{NewAdaptive(shedAbove)}
}

// Outcome records a write's outcome: err nil (accepted), a refusal for
// rate (blob.ErrThrottled), or anything else (not counted: a conflict or
// a lost connection says nothing of the store's capacity).
func (a *Admission) Outcome(now time.Time, err error) {
	throttled := errors.Is(err, blob.ErrThrottled)
	if err != nil && !throttled {
		return
	}
	a.Wrote(now, !throttled)
}
