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
// against starts that reserve them and deliver or release at random: every
// item delivered is returned by exactly one Close, none is delivered to a
// claim that has closed, and a released taker can be reserved again.
func TestEveryDeliveryIsAnsweredOnce(t *testing.T) {
	var s Set[int, int]
	const claims, rounds, starts = 8, 200, 4
	var delivered, answered atomic.Int64
	got := make([]atomic.Int64, claims*rounds*starts+1)
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
				var item int
				o := s.Offer(func(w int) bool { return w%2 == 0 || rand.IntN(2) == 0 }, func(int) []int {
					if rand.IntN(4) == 0 {
						return nil // nothing to hand: released at once
					}
					item = int(next.Add(1))
					return []int{item}
				})
				if o == nil {
					runtime.Gosched() // nothing open or handed: let the claims run
					continue
				}
				written := rand.IntN(3) != 0
				if written {
					delivered.Add(1)
				}
				o.Settle(written)
			}
		})
	}
	var claimers sync.WaitGroup
	for c := range claims {
		claimers.Go(func() {
			for range rounds {
				wake := make(chan struct{}, 1)
				tk := s.Open(c, func() { wake <- struct{}{} })
				select {
				case <-wake:
				case <-time.After(time.Duration(rand.IntN(200)) * time.Microsecond):
				}
				for _, item := range s.Close(tk) {
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
	tk := s.Open("w", func() {})
	var to string
	o := s.Offer(func(string) bool { return true }, func(w string) []string { to = w; return []string{"lease"} })
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
	if s.Offer(func(string) bool { return true }, func(string) []string { return []string{"x"} }) != nil {
		t.Fatal("a closed taker was offered work")
	}
}
