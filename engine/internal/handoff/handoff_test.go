package handoff

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEveryDeliveryIsAnsweredOnce races claims that open and close takers
// (with room for 1–4 items) against starts that reserve them and deliver
// or release at random: every item delivered is returned by exactly one
// Close, no claim answers more than its room, none is delivered to a claim
// that has closed, and released room can be reserved again.
func TestEveryDeliveryIsAnsweredOnce(t *testing.T) {
	var s Set[int, int]
	const claims, rounds, starts = 8, 200, 4
	var delivered, answered atomic.Int64
	got := make([]atomic.Int64, 1<<22)
	var next atomic.Int64
	stop := make(chan struct{})
	var starters sync.WaitGroup
	for range starts {
		starters.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var items []int
				o := s.Offer(func(w int) bool { return w%2 == 0 || rand.IntN(2) == 0 }, func(_ int, room int) []int {
					if rand.IntN(4) == 0 {
						return nil // nothing to hand: released at once
					}
					items = items[:0]
					for range 1 + rand.IntN(room) {
						items = append(items, int(next.Add(1)))
					}
					return items
				})
				if o == nil {
					runtime.Gosched() // nothing open or handed: let the claims run
					continue
				}
				written := rand.IntN(3) != 0
				if n := o.Settle(written); written != (n == len(items)) || !written && n != 0 {
					t.Errorf("Settle(%v) of %d items delivered %d", written, len(items), n)
				} else {
					delivered.Add(int64(n))
				}
			}
		})
	}
	var claimers sync.WaitGroup
	for c := range claims {
		claimers.Go(func() {
			for range rounds {
				wake := make(chan struct{}, 1)
				room := 1 + rand.IntN(4)
				tk := s.Open(c, room, func() { wake <- struct{}{} })
				select {
				case <-wake:
				case <-time.After(time.Duration(rand.IntN(200)) * time.Microsecond):
				}
				answer := s.Close(tk)
				if len(answer) > room {
					t.Errorf("a claim with room for %d answered %d items", room, len(answer))
				}
				for _, item := range answer {
					answered.Add(1)
					if got[item].Add(1) != 1 {
						t.Errorf("item %d answered twice", item)
					}
				}
			}
		})
	}
	claimers.Wait()
	close(stop)
	starters.Wait()
	if s.Len() != 0 {
		t.Fatalf("%d takers left open after every claim closed", s.Len())
	}
	if d, a := delivered.Load(), answered.Load(); d != a || d == 0 {
		t.Fatalf("%d items delivered, %d answered: want all, and some", d, a)
	}
	t.Logf("%d items delivered and answered once each", delivered.Load())
}

// TestCloseWaitsForAReservation: a claim that stops waiting while a start
// holds its taker answers what the start then delivers.
func TestCloseWaitsForAReservation(t *testing.T) {
	var s Set[string, string]
	tk := s.Open("w", 1, func() {})
	var to string
	o := s.Offer(func(string) bool { return true }, func(w string, _ int) []string { to = w; return []string{"lease"} })
	if o == nil || to != "w" {
		t.Fatal("the open taker was not offered the lease")
	}
	done := make(chan []string, 1)
	go func() { done <- s.Close(tk) }()
	select {
	case <-done:
		t.Fatal("Close returned while a reservation was in progress")
	case <-time.After(50 * time.Millisecond):
	}
	o.Settle(true)
	select {
	case got := <-done:
		if len(got) != 1 || got[0] != "lease" {
			t.Fatalf("Close returned %v, want the delivered lease", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s of the delivery")
	}
	if s.Offer(func(string) bool { return true }, func(string, int) []string { return []string{"x"} }) != nil {
		t.Fatal("a closed taker was offered work")
	}
}

// TestStartsShareATakersRoom: concurrent starts reserve one held claim's
// room, each for what it takes; the claim, woken by the first delivery,
// answers every start that reserved before it closed; a start finds no
// room once the claim's room is taken.
func TestStartsShareATakersRoom(t *testing.T) {
	var s Set[string, int]
	woken := 0
	tk := s.Open("w", 3, func() { woken++ })
	any := func(string) bool { return true }
	var offers []*Offered[string, int]
	for i := range 3 {
		o := s.Offer(any, func(_ string, room int) []int {
			if room != 3-i {
				t.Errorf("start %d offered room %d, want %d", i, room, 3-i)
			}
			return []int{i}
		})
		if o == nil {
			t.Fatalf("start %d found no room", i)
		}
		offers = append(offers, o)
	}
	if s.Offer(any, func(string, int) []int { return []int{9} }) != nil {
		t.Fatal("a fourth start was offered a claim with room for 3")
	}
	offers[1].Settle(false) // refused: its room is free again
	o := s.Offer(any, func(_ string, room int) []int { return []int{3} })
	if o == nil {
		t.Fatal("room freed by a refused start was not offered again")
	}
	offers[0].Settle(true)
	if woken != 1 {
		t.Fatalf("woken %d times after the first delivery, want 1", woken)
	}
	done := make(chan []int, 1)
	go func() { done <- s.Close(tk) }()
	select {
	case got := <-done:
		t.Fatalf("Close returned %v while two reservations were in progress", got)
	case <-time.After(50 * time.Millisecond):
	}
	offers[2].Settle(true)
	o.Settle(true)
	select {
	case got := <-done:
		if len(got) != 3 {
			t.Fatalf("Close returned %v, want the three delivered items", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s of the last delivery")
	}
	if woken != 1 {
		t.Fatalf("woken %d times, want once", woken)
	}
}
