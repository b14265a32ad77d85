package gate

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// The id marker of an event (<prefix>ids/<xx>/<idhash>, spread like the
// events' objects) holds the window an event of that id was last written
// into, and the time in its object's name. It is written before the
// event's object, so a publish retried with the id after that window
// closed is answered from the window's outcome: when the window took the
// event, with that window (existed) and nothing written, instead of
// joining the next window as well (an event counted twice). A crash
// between the marker and the event's object leaves a marker of an event
// the window never saw: a batch's outcome does not name it, so the retry
// joins the open window; a debounce's outcome counts it taken only when a
// later event of the window superseded it, which its own would have
// been too. A marker goes with its window, Host.Retention after the
// window fired (sweep.go): a publish of the id after that is a new event.
type idMark struct {
	N  int64     `json:"n"`
	At time.Time `json:"at"`
}

func idKey(prefix, id string) string { return markKey(prefix, idHash(id)) }

// markKey is the marker of the id whose hash is h.
func markKey(prefix, h string) string { return prefix + "ids/" + h[:2] + "/" + h }

// retried reports whether an event of id was taken by a window of prefix
// that has closed: ok with that window (w's open fields as a template).
// An id with no marker, or whose window is still open (an id counts once
// in a window), is not: the publish joins the open window.
func (g *Gates) retried(ctx context.Context, w window, id string) (window, bool, error) {
	m, _, err := object.Read[idMark](ctx, g.h.Store, idKey(w.prefix, id))
	if errors.Is(err, blob.ErrNotFound) {
		return window{}, false, nil
	}
	if err != nil {
		return window{}, false, err
	}
	st, _, err := g.state(ctx, w.prefix)
	if err != nil || st.N <= m.N {
		return window{}, false, err
	}
	w.n = m.N
	o, _, err := object.Read[opening](ctx, g.h.Store, w.openKey())
	if errors.Is(err, blob.ErrNotFound) {
		return window{}, false, nil // the window never opened: nothing took it
	}
	if err != nil {
		return window{}, false, err
	}
	w.open.Opened = o.Opened
	f, err := g.fire(ctx, w)
	if err != nil {
		return window{}, false, err
	}
	return w, f.has(m.At, id), nil
}

// mark writes id's marker: its event is about to be written into window w
// at at.
func (g *Gates) mark(ctx context.Context, w window, id string, at time.Time) error {
	_, err := g.h.Store.Put(ctx, idKey(w.prefix, id), object.JSON(idMark{N: w.n, At: at}), blob.WriteOptions{})
	return err
}
