// Package handoff lets a run's start hand its first attempts straight to a
// claim held on the same instance, so the record the start writes carries
// their leases and no claim has to write one (the start's eager dispatch,
// as a complete's claim_next is the complete's).
//
// A held claim opens a Taker with room for as many leases as it asked for,
// and closes it when it stops waiting. A start offers to the
// longest-waiting open taker that has room and can take its work, writes
// its record with the leases in it, then settles: the leases are
// delivered, or their room is freed when the write failed. Concurrent
// starts share one taker's room (an SDK worker holds one claim for all its
// free slots), and the claim, woken by the first delivery, answers every
// start that reserved room before it closed. Close waits for the
// reservations in progress to end, so leases are never delivered to a
// claim that has already answered: the wait is at most a start's own
// write, which its request's time bounds.
package handoff

import "sync"

// Set is one instance's open takers. The zero Set is ready to use.
type Set[W, L any] struct {
	mu      sync.Mutex
	settled *sync.Cond     // a reservation ended (lazily made on mu)
	open    []*Taker[W, L] // in the order they opened: the longest waiting first
}

// Taker is one held claim that starts may hand work to: as many starts
// as it has room for (its claim's max), each reserving what it may take.
type Taker[W, L any] struct {
	// Who is the claim's worker, for a start to match its work against.
	Who  W
	wake func()

	// Under the Set's mutex:
	room    int  // items no start has reserved or delivered
	pending int  // reservations in progress
	got     []L  // what starts delivered
	woken   bool // wake was called (the first delivery)
}

// Open offers a held claim of who, with room for up to room items, to
// starts until Close. wake tells the claim to stop waiting (a delivery
// came): it is called once, on the first delivery.
func (s *Set[W, L]) Open(who W, room int, wake func()) *Taker[W, L] {
	t := &Taker[W, L]{Who: who, wake: wake, room: max(room, 1)}
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

// Offer reserves room in the open taker that has waited longest among
// those with room that match accepts, and asks grant what to hand it — at
// most room items (grant writes them into the start's record); nil when
// there is no such taker, or grant gives nothing. grant runs under the
// Set's lock, so concurrent starts see each other's reservations exactly
// (it must not call back into the Set). The start must Settle what it was
// offered.
func (s *Set[W, L]) Offer(match func(W) bool, grant func(who W, room int) []L) *Offered[W, L] {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.open {
		if t.room == 0 || !match(t.Who) {
			continue
		}
		items := grant(t.Who, t.room)
		if len(items) == 0 {
			return nil
		}
		if len(items) > t.room {
			panic("handoff: grant gave more items than the room it was offered")
		}
		t.room -= len(items)
		t.pending++
		return &Offered[W, L]{s: s, t: t, items: items}
	}
	return nil
}

// Settle ends the reservation once the start knows whether its record was
// written: then the items are delivered (the claim is woken on the first
// delivery); else their room is free again. It returns how many items
// were delivered. A nil Offered settles nothing.
func (o *Offered[W, L]) Settle(written bool) int {
	if o == nil {
		return 0
	}
	s, t := o.s, o.t
	s.mu.Lock()
	wake := false
	if written {
		t.got = append(t.got, o.items...)
		wake, t.woken = !t.woken, true
	} else {
		t.room += len(o.items)
	}
	s.endReservation(t)
	s.mu.Unlock()
	if wake {
		t.wake()
	}
	if written {
		return len(o.items)
	}
	return 0
}

// endReservation ends one of t's reservations, under s.mu.
func (s *Set[W, L]) endReservation(t *Taker[W, L]) {
	t.pending--
	if t.pending == 0 && s.settled != nil {
		s.settled.Broadcast()
	}
}

// Close withdraws t and returns what starts delivered to it, once every
// reservation in progress has ended (each at most its start's write), so
// nothing is delivered to a claim that has answered.
func (s *Set[W, L]) Close(t *Taker[W, L]) []L {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.open {
		if o == t {
			s.open = append(s.open[:i], s.open[i+1:]...)
			break
		}
	}
	for t.pending > 0 {
		if s.settled == nil {
			s.settled = sync.NewCond(&s.mu)
		}
		s.settled.Wait()
	}
	got := t.got
	t.got = nil
	return got
}

// Len is the number of open takers.
func (s *Set[W, L]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}
