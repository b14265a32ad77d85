// Package handoff lets a run's start hand its first attempts straight to a
// claim held on the same instance, so the record the start writes carries
// their leases and no claim has to write one (the start's eager dispatch,
// as a complete's claim_next is the complete's).
//
// A held claim opens a Taker while it waits and closes it when it stops
// waiting. A start offers to the longest-waiting open taker that can take
// its work, writes its record with the leases in it, then settles: the
// leases are delivered, or the taker is released when the write failed. Close waits for a reservation in progress to end, so leases are
// never delivered to a claim that has already answered: the wait is at
// most the start's own write, which its request's time bounds.
package handoff

import "sync"

// Set is one instance's open takers. The zero Set is ready to use.
type Set[W, L any] struct {
	mu   sync.Mutex
	open []*Taker[W, L] // in the order they opened: the longest waiting first
}

// Taker is one held claim that a start may hand work to.
type Taker[W, L any] struct {
	// Who is the claim's worker, for a start to match its work against.
	Who  W
	wake func()

	state   state         // under the Set's mutex
	got     []L           // what a start delivered
	settled chan struct{} // closed when the reservation in progress ends
}

type state int

const (
	open state = iota
	reserved
	delivered
	closed
)

// Open offers a held claim of who to starts until Close. wake tells the
// claim to stop waiting (a delivery came).
func (s *Set[W, L]) Open(who W, wake func()) *Taker[W, L] {
	t := &Taker[W, L]{Who: who, wake: wake}
	s.mu.Lock()
	s.open = append(s.open, t)
	s.mu.Unlock()
	return t
}

// Offered is a start's reservation of a taker and what it will hand it.
type Offered[W, L any] struct {
	s     *Set[W, L]
	t     *Taker[W, L]
	items []L
}

// Offer reserves the open taker that has waited longest among those match
// accepts and asks grant what to hand it (grant writes it into the start's
// record); nil when there is no such taker, or grant gives nothing (the
// taker is open again). The start must Settle what it was offered.
func (s *Set[W, L]) Offer(match func(W) bool, grant func(W) []L) *Offered[W, L] {
	t := s.reserve(match)
	if t == nil {
		return nil
	}
	items := grant(t.Who)
	if len(items) == 0 {
		s.release(t)
		return nil
	}
	return &Offered[W, L]{s: s, t: t, items: items}
}

// Settle ends the reservation once the start knows whether its record was
// written: then the items are delivered and the claim woken to answer
// them; else the taker is open again. It returns how many items were
// delivered. A nil Offered settles nothing.
func (o *Offered[W, L]) Settle(written bool) int {
	switch {
	case o == nil:
		return 0
	case written:
		o.s.deliver(o.t, o.items)
		return len(o.items)
	default:
		o.s.release(o.t)
		return 0
	}
}

// reserve takes the open taker that has waited longest among those match
// accepts; nil when there is none.
func (s *Set[W, L]) reserve(match func(W) bool) *Taker[W, L] {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.open {
		if match(t.Who) {
			s.open = append(s.open[:i], s.open[i+1:]...)
			t.state, t.settled = reserved, make(chan struct{})
			return t
		}
	}
	return nil
}

// deliver ends t's reservation with ls and wakes its claim.
func (s *Set[W, L]) deliver(t *Taker[W, L], ls []L) {
	s.mu.Lock()
	t.state, t.got = delivered, ls
	close(t.settled)
	s.mu.Unlock()
	t.wake()
}

// release ends t's reservation with nothing: t is open again.
func (s *Set[W, L]) release(t *Taker[W, L]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.state = open
	s.open = append(s.open, t)
	close(t.settled)
}

// Close withdraws t and returns what a start delivered to it: nothing
// while it was open; with a reservation in progress, once that ends.
func (s *Set[W, L]) Close(t *Taker[W, L]) []L {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch t.state {
		case open:
			for i, o := range s.open {
				if o == t {
					s.open = append(s.open[:i], s.open[i+1:]...)
					break
				}
			}
		case reserved:
			ch := t.settled
			s.mu.Unlock()
			<-ch
			s.mu.Lock()
			continue
		}
		got := t.got
		t.state, t.got = closed, nil
		return got
	}
}

// Len is the number of open takers.
func (s *Set[W, L]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}
