package sdk

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// TestClock is a test server's clock: its time and how far tests moved it.
type TestClock = cairn.TestClock

// AdvanceClock moves the clock of a test server (`cairn dev
// --test-clock`; sdktest.Server.Advance does the same in-process) d
// forward: the sleeps, wait timeouts, retry backoffs, deadlines and
// schedule ticks due by the new time have fired when it returns. A
// server without a test clock answers 404 (IsNotFound).
func (c *Client) AdvanceClock(ctx context.Context, d time.Duration) (*TestClock, error) {
	return decodeView[TestClock](c)(c.api.AdvanceClock(ctx, client.AdvanceClockRequest{AdvanceMs: d.Milliseconds()}))
}

// Clock reads a test server's clock (404 without one).
func (c *Client) Clock(ctx context.Context) (*TestClock, error) {
	return decodeView[TestClock](c)(c.api.GetClock(ctx))
}
