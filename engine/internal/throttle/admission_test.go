package throttle

import (
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
)

// Only acceptances and refusals for rate count: a conflict or a lost
// connection says nothing of the store's capacity.
func TestAdmissionCountsOnlyRateRefusals(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	throttled := &blob.Error{Op: "swap", Key: "runs/x", Err: blob.ErrThrottled}
	for _, tc := range []struct {
		name  string
		other error
		shed  bool
	}{
		{"refusals for rate", throttled, true},
		{"conflicts", blob.ErrPreconditionFailed, false},
		{"lost connections", errors.New("connection reset"), false},
	} {
		a := NewAdmission(DefaultShedAbove)
		for i := range 1000 {
			var err error
			if i%10 != 0 { // nine in ten
				err = tc.other
			}
			a.Saw(now.Add(time.Duration(i)*time.Millisecond), err)
		}
		if p := a.Probability(now.Add(time.Second)); (p > 0) != tc.shed {
			t.Errorf("%s: shed share %.3f; want shedding %v", tc.name, p, tc.shed)
		}
	}
}
