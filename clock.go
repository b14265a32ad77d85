package cairn

import "time"

// MaxClockAdvance bounds one move of a test server's clock (ten years).
const MaxClockAdvance = 10 * 365 * 24 * time.Hour

// AdvanceClockRequest moves a test server's clock forward
// (POST /dev/clock; `cairn dev --test-clock`, sdk/sdktest).
type AdvanceClockRequest struct {
	AdvanceMs int64 `json:"advance_ms" minimum:"0" maximum:"315360000000" doc:"How far to move the clock forward, in milliseconds (at most ten years a call; the clock never goes back)."`
}

// TestClock is a test server's clock: the real time plus how far tests
// have moved it.
type TestClock struct {
	Now      time.Time `json:"now" doc:"The server's time: what its timers, sleeps, backoffs, deadlines and leases are measured on."`
	OffsetMs int64     `json:"offset_ms" doc:"How far the clock has been moved ahead of the real time, in milliseconds."`
}
