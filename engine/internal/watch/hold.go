package watch

import (
	"context"
	"time"
)

// Hold is one request held until a run's record answers it (Wait).
type Hold[T any] struct {
	Run      string
	Rev      func(*T) int64                    // a record's revision
	Answers  func(*T) bool                     // whether a record answers the request
	Read     func(context.Context) (*T, error) // one read of the record from the store
	Cached   func(rev int64) *T                // a record of rev or newer committed here; nil: none
	Recent   func() *T                         // a copy recent enough to stand for the first read; nil: none
	Fallback time.Duration                     // how often the record is read in case a notice was lost
	Deadline time.Time                         // when the hold ends
	Done     <-chan struct{}                   // closed when the instance drains
}

// Wait registers the request on r before its first read (a change
// committed after it is signalled, a change before it is in the read),
// reads the record or takes Recent's copy instead (a change made before
// it is in that copy when made here, has removed the copy when heard of
// from elsewhere, and is otherwise found by the Fallback read, as any
// change made elsewhere while it holds), and holds until a record answers
// the request, the
// deadline passes, ctx ends or Done closes; it returns the newest record
// it saw. A change it hears of is read from Cached when it holds it,
// else by one read shared by every request the change woke (AtLeast);
// every Fallback it reads the record anyway.
func (h Hold[T]) Wait(ctx context.Context, r *Registry[T]) (*T, error) {
	w, stop := r.Add(h.Run)
	defer stop()
	cur, err := h.first(ctx)
	if err != nil {
		return nil, err
	}
	consumed := h.Rev(cur)
	fallback := time.NewTimer(h.Fallback)
	defer fallback.Stop()
	hold := time.NewTimer(time.Until(h.Deadline))
	defer hold.Stop()
	for {
		if h.Answers(cur) || !time.Now().Before(h.Deadline) {
			return cur, nil
		}
		heard, next := r.State(w)
		if heard > consumed {
			consumed = heard
			nr, err := h.atLeast(ctx, w, heard)
			if err != nil {
				return nil, err
			}
			cur = h.newer(cur, nr)
			continue
		}
		select {
		case <-next:
		case <-fallback.C:
			nr, err := h.Read(ctx)
			if err != nil {
				return nil, err
			}
			cur = h.newer(cur, nr)
			consumed = max(consumed, h.Rev(cur))
			fallback.Reset(h.Fallback)
		case <-hold.C:
		case <-ctx.Done():
			return cur, nil
		case <-h.Done:
			return cur, nil
		}
	}
}

// first is the record a hold starts from: Recent's copy, else one read.
func (h Hold[T]) first(ctx context.Context) (*T, error) {
	if h.Recent != nil {
		if c := h.Recent(); c != nil {
			return c, nil
		}
	}
	return h.Read(ctx)
}

// newer is nr when it is newer than cur, else cur.
func (h Hold[T]) newer(cur, nr *T) *T {
	if h.Rev(nr) > h.Rev(cur) {
		return nr
	}
	return cur
}

// atLeast returns the record of revision rev or newer for a request woken
// by a change to rev: Cached's when it has it (a change committed here),
// else from one read shared by every request of this watch woken by that
// change.
func (h Hold[T]) atLeast(ctx context.Context, w *Watch[T], rev int64) (*T, error) {
	if c := h.Cached(rev); c != nil {
		return c, nil
	}
	return w.AtLeast(rev, func() (*T, int64, error) {
		r, err := h.Read(ctx)
		if err != nil {
			return nil, 0, err
		}
		return r, h.Rev(r), nil
	})
}
