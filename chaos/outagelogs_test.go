package chaos

import (
	"testing"
	"time"
)

// TestCheckOutageLogs: an outage logged per request fails the round; the
// summary's few lines, and one claim-path line per injected fault, pass.
func TestCheckOutageLogs(t *testing.T) {
	mk := func(logs map[string]int) *round {
		return &round{
			cfg:  Config{Duration: 12 * time.Second},
			apis: make([]*proc, 3),
			rep: &Report{
				Kills:      map[Kind]int{KindStore: 2, KindAPI: 3},
				Pauses:     map[Kind]int{},
				Faults:     FaultCounts{Error: 40, Conflict: 16, Throttle: 22, Lost: 20},
				OutageLogs: logs,
			},
		}
	}
	// As measured in a short MinIO round (seed 672942617).
	ok := mk(map[string]int{"claims_back_off": 28, "store_error": 42, "store_unreachable": 4})
	ok.checkOutageLogs()
	if len(ok.rep.Failures) != 0 {
		t.Fatalf("a summarised outage failed the check: %v", ok.rep.Failures)
	}
	// As before the summary: 1,260 lines in a 12 s round.
	bad := mk(map[string]int{"store_unreachable": 1260})
	bad.checkOutageLogs()
	if len(bad.rep.Failures) != 1 {
		t.Fatalf("an outage logged per request passed: %v", bad.rep.Failures)
	}
	none := mk(map[string]int{"store_unreachable": 1260})
	none.rep.Kills[KindStore] = 0
	none.checkOutageLogs()
	if len(none.rep.Failures) != 0 {
		t.Fatalf("a round without store outages checked its outage logs: %v", none.rep.Failures)
	}
}
