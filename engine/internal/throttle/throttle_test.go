package throttle

import (
	"math"
	"sync"
	"testing"
	"time"
)

// The shed share is max(0, (R − K·A)/(R + 1)) over the window: nothing
// below shedAbove refused, the formula above it, nothing once the window
// has passed, nothing when off.
func TestAdaptiveShare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	feed := func(a *Adaptive, n, refused int) {
		for i := range n {
			a.Wrote(now.Add(time.Duration(i)*10*time.Millisecond), i >= refused)
		}
	}
	at := now.Add(11 * time.Second) // the feed spans 10 s
	for _, tc := range []struct {
		name       string
		n, refused int
		want       float64
	}{
		{"none refused", 1000, 0, 0},
		{"9% refused", 1000, 90, 0},
		{"50% refused", 1000, 500, (1000 - 500/0.9) / 1001},
		{"90% refused", 1000, 900, (1000 - 100/0.9) / 1001},
		{"too few writes", MinWrites - 1, MinWrites - 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAdaptive(0.1)
			feed(a, tc.n, tc.refused)
			if got := a.Probability(at); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("shed share %.4f, want %.4f", got, tc.want)
			}
			if got := a.Probability(at.Add(Window + time.Second)); got != 0 {
				t.Fatalf("after the window: shed share %.4f, want 0", got)
			}
		})
	}
	for _, off := range []float64{-1, 0, 1} {
		a := NewAdaptive(off)
		feed(a, 1000, 900)
		if p := a.Probability(at); p != 0 || a.Shed(at) {
			t.Fatalf("shedAbove %v: shed share %.4f, want 0 (off)", off, p)
		}
	}
}

// Shed refuses about the share; NoteShed says to log at most once every
// 10 s.
func TestAdaptiveShedAndNote(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAdaptive(0.1)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 250 {
				a.Wrote(now.Add(time.Duration(i)*time.Millisecond), (g*250+i)%10 == 0)
			}
		})
	}
	wg.Wait()
	p := a.Probability(now)
	if want := (1000 - 100/0.9) / 1001; math.Abs(p-want) > 1e-9 {
		t.Fatalf("share %.4f, want %.4f", p, want)
	}
	shed := 0
	for range 10_000 {
		if a.Shed(now) {
			shed++
		}
	}
	if got := float64(shed) / 10_000; math.Abs(got-p) > 0.03 {
		t.Fatalf("shed %.3f of starts, want about %.3f", got, p)
	}
	if _, log := a.NoteShed(now); !log {
		t.Fatal("first note not logged")
	}
	if _, log := a.NoteShed(now.Add(9 * time.Second)); log {
		t.Fatal("logged twice within 10 s")
	}
	if _, log := a.NoteShed(now.Add(10 * time.Second)); !log {
		t.Fatal("not logged after 10 s")
	}
}

// With burst 1 grants are at least T apart; a burst b lets b go at once;
// a refusal says when to ask again, and asking then is granted.
func TestGCRA(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := GCRA{Limit: 10, Period: time.Second, Burst: 1}
	if g.Emission() != 100*time.Millisecond {
		t.Fatalf("T = %v", g.Emission())
	}
	ok, tat := g.Take(time.Time{}, now)
	if !ok || !tat.Equal(now.Add(100*time.Millisecond)) {
		t.Fatalf("first take: %v %v", ok, tat)
	}
	ok, again := g.Take(tat, now.Add(40*time.Millisecond))
	if ok || !again.Equal(tat) {
		t.Fatalf("second take 40 ms later: %v, ask again at %v, want refused until %v", ok, again, tat)
	}
	if ok, next := g.Take(tat, again); !ok || !next.Equal(tat.Add(100*time.Millisecond)) {
		t.Fatalf("take when told: %v %v", ok, next)
	}

	b := GCRA{Limit: 10, Period: time.Second, Burst: 3}
	var state time.Time
	for i := range 3 {
		var ok bool
		if ok, state = b.Take(state, now); !ok {
			t.Fatalf("burst grant %d refused", i)
		}
	}
	ok, again = b.Take(state, now)
	if ok || !again.Equal(now.Add(100*time.Millisecond)) {
		t.Fatalf("fourth grant at once: %v, ask again at %v", ok, again)
	}
	// Any window of one period holds at most Limit+Burst-1 grants.
	grants, state := 0, time.Time{}
	for ms := 0; ms < 1000; ms++ {
		if ok, next := b.Take(state, now.Add(time.Duration(ms)*time.Millisecond)); ok {
			grants, state = grants+1, next
		}
	}
	if grants > 10+3-1 {
		t.Fatalf("%d grants in one period, want at most %d", grants, 12)
	}
}
