package testutil

import (
	"testing"
	"time"
)

// DefaultTick is how often Eventually checks its condition.
const DefaultTick = 10 * time.Millisecond

// Eventually waits until cond reports true, checking it at once and then
// every DefaultTick, for at most within. At the bound it fails the test
// with what was awaited, the bound, and cond's last diagnosis (the second
// result: what was seen instead). It is the one polling wait of the
// tests: use it where no long poll or signal of the awaited thing exists.
// Call it from the test's goroutine; cond may fail the test itself.
func Eventually(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	EventuallyEvery(t, within, DefaultTick, what, cond)
}

// EventuallyEvery is Eventually checking cond every tick: coarser for a
// condition that costs a request, finer where the wait itself is measured.
func EventuallyEvery(t testing.TB, within, tick time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, diag := wait(within, tick, cond); !ok {
		t.Fatalf("timed out after %v waiting for %s; last seen: %s", within, what, diag)
	}
}

// wait checks cond at once and on every tick until it holds (true) or
// within passes (false, with cond's last diagnosis, checked once more at
// the bound).
func wait(within, tick time.Duration, cond func() (bool, string)) (bool, string) {
	if ok, _ := cond(); ok {
		return true, ""
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	bound := time.NewTimer(within)
	defer bound.Stop()
	for {
		select {
		case <-ticker.C:
			if ok, _ := cond(); ok {
				return true, ""
			}
		case <-bound.C:
			return cond()
		}
	}
}
