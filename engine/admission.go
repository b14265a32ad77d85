package engine

import (
	"time"

	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// Admission control: an instance sheds new runs while the store is
// refusing its writes for rate; engine/internal/throttle (admission.go)
// says why and how.

// DefaultShedAbove is the share of refused writes above which starts are
// shed.
const DefaultShedAbove = throttle.DefaultShedAbove

// errShed is the cause of a start refused by admission control.
var errShed = throttle.ErrShed

type admission struct{ *throttle.Admission }

func newAdmission(shedAbove float64) *admission {
	return &admission{throttle.NewAdmission(shedAbove)}
}

// wrote records a write's outcome (throttle.Admission.Outcome).
func (a *admission) wrote(now time.Time, err error) { a.Outcome(now, err) }
