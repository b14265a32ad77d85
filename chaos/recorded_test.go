//go:build chaos

package chaos

import (
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestRecordedHistory checks a history recorded by a chaos round
// (CHAOS_HISTORY_FILE=<dir>/history.jsonl): for looking at a kept round.
// Built only with -tags chaos, like the rounds themselves.
func TestRecordedHistory(t *testing.T) {
	path := os.Getenv("CHAOS_HISTORY_FILE")
	if path == "" {
		t.Skip("set CHAOS_HISTORY_FILE to a chaos round's history.jsonl")
	}
	calls, err := readLines[Call](path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	res, _, n := CheckHistory(calls, 5*time.Minute)
	t.Logf("%d calls, %d lease operations: %s in %v", len(calls), n, res, time.Since(t0))
	if res != porcupine.Ok {
		for _, a := range IllegalAttempts(calls, 10) {
			t.Log(a)
		}
		t.Fatal(res)
	}
}
