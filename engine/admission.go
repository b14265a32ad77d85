package engine

import "github.com/cairn-dev/cairn/engine/internal/throttle"

// Admission control (throttle.Admission): an instance sheds new runs
// while the store is refusing its writes for rate.

// DefaultShedAbove is the share of refused writes above which starts are
// shed.
const DefaultShedAbove = throttle.DefaultShedAbove

// errShed is the cause of a start refused by admission control.
var errShed = throttle.ErrShed

type admission = throttle.Admission

var newAdmission = throttle.NewAdmission
