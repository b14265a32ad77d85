package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

// elapsedRE finds the elapsed times --wait prints: "+1.2s" at the start
// of a progress line, and the live status line's last field.
var elapsedRE = regexp.MustCompile(`(?m)(?:^[\r\x1b\[K ]*\+(\S+)\s|current: [^\r\n]*  (\S+)\r)`)

// The elapsed times --wait prints never go back and stay the run's, when
// the server's clock is minutes ahead of the client's or behind it: they
// are read on one clock (the server's times, advanced by the client's
// monotonic clock between readings), not the client's wall clock less the
// server's start time. On a terminal too, whose live line shows it.
func TestWaitElapsedNeverGoesBack(t *testing.T) {
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			srv := skewedSteps(t, skew)
			onTerminal(t)

			out := mustCLI(t, srv.URL, "runs", "start", "steps", "--input", `"x"`, "--wait")
			var seen []time.Duration
			for _, m := range elapsedRE.FindAllStringSubmatch(out, -1) {
				text := m[1] + m[2]
				d, err := time.ParseDuration(text)
				if err != nil {
					t.Fatalf("elapsed %q: %v\n%q", text, err, out)
				}
				if d < 0 || d > time.Minute {
					t.Errorf("elapsed %s: not the run's (the server's clock is %s off)\n%q", d, skew, out)
				}
				if n := len(seen); n > 0 && d < seen[n-1] {
					t.Errorf("elapsed went back from %s to %s\n%q", seen[n-1], d, out)
				}
				seen = append(seen, d)
			}
			if len(seen) < 3 || !strings.Contains(out, "(2/2 steps)") {
				t.Fatalf("too few elapsed times (%v) in:\n%q", seen, out)
			}
		})
	}
}

// A retry's time is compared with the server's time as the readings give
// it, not the client's clock: a server ten minutes ahead once made every
// ready step of a --wait read "retry pending".
func TestRetryPendingOnTheServersClock(t *testing.T) {
	server := time.Now().Add(10 * time.Minute) // the server is ahead
	var c elapsedClock
	r := &sdk.Run{}
	r.CreatedAt, r.UpdatedAt = server.Add(-time.Second), server
	c.observe(r)
	now := c.serverNow()
	if d := now.Sub(server); d < 0 || d > time.Minute {
		t.Fatalf("the server's time estimated %s off", d)
	}
	due := sdk.StepView{ID: "s", Status: cairn.StepReady, Attempt: 2, ReadyAt: ptrTime(server.Add(-time.Millisecond))}
	if state, _ := stepState(due, true, now); state != "waiting for a worker (attempt 2)" {
		t.Errorf("a retry due on the server's clock: %q, want waiting for a worker", state)
	}
	later := sdk.StepView{ID: "s", Status: cairn.StepReady, Attempt: 2, ReadyAt: ptrTime(server.Add(time.Minute))}
	if state, _ := stepState(later, true, now); state != "retry pending (attempt 2)" {
		t.Errorf("a retry a minute ahead on the server's clock: %q, want retry pending", state)
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// A durable function between attempts reads as suspended, with its wake
// time when it sleeps and its operations so far.
func TestSuspendedFunctionState(t *testing.T) {
	now := time.Now()
	suspended := []cairn.Attempt{{N: 1, Outcome: cairn.OutcomeSuspended}}
	ops := []cairn.Operation{{ID: "/a#0"}, {ID: "/nap#0"}}
	sleeping := sdk.StepView{ID: "main", Kind: cairn.KindFunction, Status: cairn.StepReady, Attempt: 2, Attempts: suspended, Operations: ops, ReadyAt: ptrTime(now.Add(time.Hour))}
	if state, detail := stepState(sleeping, true, now); state != "suspended" || !strings.HasPrefix(detail, "until ") || !strings.HasSuffix(detail, "; 2 operations") {
		t.Errorf("a sleeping function: %q %q", state, detail)
	}
	waiting := sleeping
	waiting.ReadyAt = ptrTime(now.AddDate(100, 0, 0)) // waits for an event or a run
	if state, detail := stepState(waiting, true, now); state != "suspended" || detail != "2 operations" {
		t.Errorf("a waiting function: %q %q", state, detail)
	}
	waiting.Holder = &cairn.Holder{Worker: "w1", ClaimedAt: now}
	if state, _ := stepState(waiting, true, now); !strings.HasPrefix(state, "running") {
		t.Errorf("a function held by a worker: %q", state)
	}
}
