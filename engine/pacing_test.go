package engine

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
)

// On a store that takes one write per object per period (GCS: a second;
// here 100 ms), a committer told the limit (ObjectWritesPerSecond) spaces
// its writes of a run record instead of being refused and retrying every
// 100–200 ms. A 20-step linear run driven as fast as eager dispatch goes
// is refused far less often, and still completes.
func TestCommitterSpacesRecordWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("two 20-step runs at a 100 ms per-object period: a few seconds")
	}
	// Refused writes of the run record, which the pacing spaces; a lease
	// swapped by a deferred complete soon after its claim created it is
	// refused too, more often the more the record is congested (the
	// machine's load), and is not what this paces.
	drive := func(t *testing.T, pace float64) (refused int64, took time.Duration) {
		h := newHarness(t, withFaults(faults.Profile{WritesPerObjectPerSecond: 1, TimeScale: 0.1}), withConfig(Config{ObjectWritesPerSecond: pace, ShedAbove: -1}), wallClock(), withWorkflows("w", linear("lin", "1", 20)))
		ctx, e, fs := h.ctx, h.e, h.faults
		begin := time.Now()
		id := mustStart(t, e, "lin", `{"n": 1}`)
		next := []cairn.Lease{claimOne(t, e, "w")}
		for len(next) > 0 {
			l := next[0]
			var ended *cairn.Ended
			for {
				var err error
				ended, err = e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), ClaimNext: &cairn.ClaimNext{Max: 1}})
				var u *UnavailableError
				if err == nil {
					break
				}
				if !errors.As(err, &u) && !errors.Is(err, blob.ErrThrottled) {
					t.Fatalf("complete %s: %v", l.Step, err)
				}
				spend(50 * time.Millisecond) // the SDK's backoff
			}
			next = ended.Leases
			if len(next) == 0 && ended.RunStatus == cairn.RunRunning {
				next = []cairn.Lease{claimOne(t, e, "w")} // deferred: the fold makes the next step ready
			}
		}
		r, err := e.GetRun(ctx, id)
		if err != nil || r.Status != cairn.RunCompleted {
			t.Fatalf("run: %v %v, want completed", r.Status, err)
		}
		st := fs.Stats()
		t.Logf("pace %v: refused writes by key prefix %v", pace, st.ThrottledBy)
		return st.ThrottledBy["runs"], time.Since(begin)
	}
	unpacedRefused, unpacedTook := drive(t, 0)
	pacedRefused, pacedTook := drive(t, 10)
	t.Logf("20 steps: unpaced %d run-record writes refused in %v; paced %d refused in %v", unpacedRefused, unpacedTook.Round(time.Millisecond), pacedRefused, pacedTook.Round(time.Millisecond))
	if pacedRefused*3 > unpacedRefused || unpacedRefused < 10 {
		t.Fatalf("refused run-record writes: %d paced, %d unpaced; want the paced run to be refused less than a third as often", pacedRefused, unpacedRefused)
	}
}
