package gate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// state is a key's state object.
type state struct {
	N        int64     `json:"n"`         // the open window
	SealedAt time.Time `json:"sealed_at"` // when window n-1 was sealed (for people)
}

// eventBody is an event's object.
type eventBody struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Join puts ev into the open window of its key for workflow and answers
// the window it joined, or, for an id a closed window took already (a
// retried publish, ids.go), that window, marked existed. Requests: 1 GET of
// the id's marker, 1 GET of the key's state, 1 PUT of the marker and 1
// create of the event's object; per instance and window once more, the window's open
// object (create, or GET) and a timer; now and then (a batch) a LIST.
func (g *Gates) Join(ctx context.Context, s *Spec, workflow string, ev render.Event) (cairn.TriggeredRun, error) {
	key, err := s.KeyOf(ev)
	if err != nil {
		g.h.Log.Warn("a debounce or batch key failed on an event: no run", "workflow", workflow, "event", ev.Name, "id", ev.ID, "err", err)
		return cairn.TriggeredRun{}, nil
	}
	prefix := g.h.Keys.Gate(workflow+"\x00"+s.Kind, key)
	body := object.JSON(eventBody{ID: ev.ID, Name: ev.Name, Payload: ev.Payload})
	tmpl := window{prefix: prefix, open: opening{Workflow: workflow, Kind: s.Kind, Key: key, Period: s.Period, Timeout: s.Timeout, MaxSize: s.MaxSize}}
	if w, ok, err := g.retried(ctx, tmpl, ev.ID); err != nil {
		return cairn.TriggeredRun{}, err
	} else if ok {
		return cairn.TriggeredRun{Workflow: workflow, Window: w.id(), Existed: true}, nil
	}
	for range 4 {
		begun := time.Now()
		st, _, err := g.state(ctx, prefix)
		if err != nil {
			return cairn.TriggeredRun{}, err
		}
		w := tmpl
		w.n = st.N
		if w.open.Opened, err = g.opened(ctx, w); err != nil {
			return cairn.TriggeredRun{}, err
		}
		at := g.h.Now()
		if err := g.mark(ctx, w, ev.ID, at); err != nil {
			return cairn.TriggeredRun{}, err
		}
		ek := w.eventKey(at, ev.ID)
		if _, err := g.h.Store.Create(ctx, ek, body); err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
			return cairn.TriggeredRun{}, err
		}
		in, err := g.took(ctx, w, at, ev.ID, begun)
		if err != nil {
			return cairn.TriggeredRun{}, err
		}
		if in {
			g.counted(ctx, w)
			return cairn.TriggeredRun{Workflow: workflow, Window: w.id()}, nil
		}
		if err := g.h.Store.Delete(ctx, ek); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return cairn.TriggeredRun{}, err
		}
	}
	return cairn.TriggeredRun{}, errClosing
}

// state reads a key's state (window 1 when it has none).
func (g *Gates) state(ctx context.Context, prefix string) (state, blob.Version, error) {
	st, ver, err := object.Read[state](ctx, g.h.Store, stateKey(prefix))
	if errors.Is(err, blob.ErrNotFound) {
		return state{N: 1}, "", nil
	}
	if err != nil {
		return state{}, "", err
	}
	return *st, ver, nil
}

// opened makes sure window w is open, and returns when it opened: the
// first event an instance writes into a window arms its timer and creates
// its open object (or reads it, when another did); later ones ask memory.
func (g *Gates) opened(ctx context.Context, w window) (time.Time, error) {
	g.mu.Lock()
	if sn := g.local[w.dir()]; sn != nil && !sn.opened.IsZero() {
		g.mu.Unlock()
		return sn.opened, nil
	}
	g.mu.Unlock()
	now := g.h.Now()
	w.open.Opened = now
	// The timer first: a window never exists without one (an extra timer
	// costs the reaper a read).
	if _, err := g.h.PutTimer(ctx, g.timerName(w), g.h.TimerDue(w.firstDue(), now)); err != nil {
		return time.Time{}, err
	}
	opened := now
	if _, err := g.h.Store.Create(ctx, w.openKey(), object.JSON(w.open)); errors.Is(err, blob.ErrPreconditionFailed) {
		o, _, err := object.Read[opening](ctx, g.h.Store, w.openKey())
		if err != nil {
			return time.Time{}, err
		}
		opened = o.Opened
	} else if err != nil {
		return time.Time{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.local) > maxLocal {
		clear(g.local) // memory of old windows: re-read when needed
	}
	g.local[w.dir()] = &seen{opened: opened}
	return opened, nil
}

// maxLocal bounds the open windows an instance remembers.
const maxLocal = 10_000

// firstDue is when a new window is first looked at: a debounce's period
// after it opened, a batch's timeout.
func (w window) firstDue() time.Time {
	if w.open.Kind == Debounce {
		return w.open.Opened.Add(w.open.Period)
	}
	return w.closes()
}

// took tells whether window w took the event written at at: no seal came
// before the write (it was quick, or state still names w), or w's outcome
// has it.
func (g *Gates) took(ctx context.Context, w window, at time.Time, id string, begun time.Time) (bool, error) {
	if time.Since(begun) < g.h.Settle {
		return true, nil // the firer lists Settle after its seal, which came after our read
	}
	st, _, err := g.state(ctx, w.prefix)
	if err != nil || st.N == w.n {
		return err == nil, err
	}
	f, err := g.fire(ctx, w)
	if err != nil {
		return false, err
	}
	return f.has(at, id), nil
}

// counted notes an event this instance wrote into batch window w, and now
// and then (every tenth of max_size) counts the window's events: a full
// window is fired, or, younger than MinWindow, fired by the next event
// after it (its timer armed for then, should none come).
func (g *Gates) counted(ctx context.Context, w window) {
	if w.open.Kind != Batch {
		return
	}
	now := g.h.Now()
	early := w.open.Opened.Add(cairn.MinWindow)
	g.mu.Lock()
	sn := g.local[w.dir()]
	if sn == nil {
		sn = &seen{opened: w.open.Opened}
		g.local[w.dir()] = sn
	}
	sn.events++
	check := sn.full || sn.events%max(1, w.open.MaxSize/10) == 0
	known, arm := sn.full, !sn.full && now.Before(early)
	g.mu.Unlock()
	if !check || (known && now.Before(early)) {
		return
	}
	if !known {
		if full, err := g.full(ctx, w); err != nil || !full {
			return // the timer fires it
		}
		g.mu.Lock()
		sn.full = true
		g.mu.Unlock()
	}
	if due := g.h.TimerDue(early, now); arm && due.Before(g.h.TimerDue(w.closes(), w.open.Opened)) {
		if _, err := g.h.PutTimer(ctx, g.timerName(w), due); err != nil {
			g.h.Log.Warn("a full batch's timer could not be armed: it fires at its timeout", "err", err)
		}
	}
	if arm {
		return
	}
	g.mu.Lock()
	firing := sn.firing
	sn.firing = true
	g.mu.Unlock()
	if firing {
		return // another publish of this instance fires it
	}
	if _, err := g.fire(ctx, w); err != nil {
		g.h.Log.Warn("a full batch could not be fired: its timer will", "err", err)
	}
}

// full tells whether batch window w holds max_size events (one LIST page).
func (g *Gates) full(ctx context.Context, w window) (bool, error) {
	page, err := g.h.Store.List(ctx, blob.ListOptions{Prefix: w.eventsPrefix(), PageSize: w.open.MaxSize})
	return len(page.Objects) >= w.open.MaxSize || page.NextPageToken != "", err
}
