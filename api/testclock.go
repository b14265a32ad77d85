package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/engine"
)

// ---- A test server's clock (cairn dev --test-clock, sdk/sdktest) ----

type advanceClockInput struct {
	Body cairn.AdvanceClockRequest
}

type clockOutput struct {
	Body struct {
		cairn.TestClock
		Reaped *engine.ReapStats `json:"reaped,omitempty" doc:"The reaper pass the move ran: the timers that came due by the new time fired before the answer."`
	}
}

// registerClockOps registers the test clock's operations. They are in
// every server's API, and answer 404 where the server has no test clock
// (every deployed one).
func (a *API) registerClockOps() {
	op(a, huma.Operation{
		OperationID: "getClock", Method: http.MethodGet, Path: "/dev/clock", Tags: []string{"Operations"},
		Summary:     "Read a test server's clock",
		Description: "The time a test server's engine measures everything on, and how far tests moved it. 404 on a server without a test clock.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, _ *struct{}) (*clockOutput, error) {
		return a.clockView(nil)
	})
	op(a, huma.Operation{
		OperationID: "advanceClock", Method: http.MethodPost, Path: "/dev/clock", Tags: []string{"Operations"},
		Summary: "Move a test server's clock forward",
		Description: "Moves the clock advance_ms forward (never back), wakes the claims whose work came due, and runs one reaper pass, so the sleeps, wait timeouts, retry backoffs, deadlines and schedule ticks due by the new time have fired when it answers. " +
			"Leases are measured on this clock too: an attempt running across a move longer than its lease is recovered as lost, so move the clock while the run waits. " +
			"404 on a server without a test clock (only `cairn dev --test-clock` and sdk/sdktest have one).",
		Errors: []int{http.StatusNotFound},
	}, auth.ScopeAdmin, func(ctx context.Context, in *advanceClockInput) (*clockOutput, error) {
		if a.clock == nil {
			return nil, noClock()
		}
		a.clock.Advance(time.Duration(in.Body.AdvanceMs) * time.Millisecond)
		s, err := a.engine.ClockMoved(ctx)
		if err != nil {
			return nil, err
		}
		return a.clockView(&s)
	})
}

func (a *API) clockView(reaped *engine.ReapStats) (*clockOutput, error) {
	if a.clock == nil {
		return nil, noClock()
	}
	out := &clockOutput{}
	out.Body.Now, out.Body.OffsetMs = a.clock.Now().UTC(), a.clock.Offset().Milliseconds()
	out.Body.Reaped = reaped
	return out, nil
}

func noClock() error {
	return problem(http.StatusNotFound, "this server has no test clock: start it with `cairn dev --test-clock` (or sdk/sdktest)")
}
