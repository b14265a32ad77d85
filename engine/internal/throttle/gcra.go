package throttle

import "time"

// GCRA is the generic cell rate algorithm: a rate of Limit per Period
// emits one grant every T = Period/Limit. Its state is tat, the
// theoretical arrival time of the next grant. A claim at now is granted
// when tat - now <= tau, where tau = (Burst-1)*T, and then the state is
// tat = max(tat, now) + T; otherwise it waits until tat - tau. With Burst
// 1 grants are at least T apart, so any window of one Period holds at
// most Limit grants; a burst b lets b go at once, and a window then holds
// at most Limit+b-1.
type GCRA struct {
	Limit  int
	Period time.Duration
	Burst  int // at least 1
}

// Emission is T, the spacing of grants.
func (g GCRA) Emission() time.Duration { return g.Period / time.Duration(g.Limit) }

// Take asks for one grant at now, the state being tat. Granted, it
// returns the state to store; refused, when to ask again.
func (g GCRA) Take(tat, now time.Time) (bool, time.Time) {
	t := g.Emission()
	tau := t * time.Duration(g.Burst-1)
	if tat.Before(now) {
		tat = now
	}
	if tat.Sub(now) > tau {
		return false, tat.Add(-tau)
	}
	return true, tat.Add(t)
}
