package gate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/par"
)

// Sweeping. After its firing a window keeps its open object, its outcome
// and the id markers of its events: a publish retried with an id is
// answered from them (ids.go), a firing redone reads the outcome, a late
// event's publish checks it. They are kept Host.Retention after the window
// fired, then deleted; a publish with one of its ids after that is a new
// event, which joins the open window.
//
// No listing of gates/ finds old windows: the visit that finishes a
// firing re-arms the window's timer, under a sweep name
// (g-<sha>-<n>-x<tag>), at the firing's time plus Retention, and that
// timer's visit deletes the window. Which markers name the window the
// outcome says (its runs' events, a debounce's superseded ones), and a
// listing of the window's own objects adds any event written after the
// firing listed it (a late write whose publisher died). A marker is
// deleted only while it names the window (an id published again since,
// into a later window, keeps its marker for that one); the outcome goes
// last, so a sweep that dies midway is redone whole by the timer's next
// visit, and sweeps running at once delete the same objects. The key's
// state stays: its window numbers, part of its runs' idempotency keys,
// never repeat.

// sweepTag starts the tag of a sweep's timer (an instance's tag is hex).
const sweepTag = "x"

// sweepName is window w's sweep timer name on this instance.
func (g *Gates) sweepName(w window) string {
	return TimerPrefix + w.id() + "-" + sweepTag + g.tag
}

// armSweep arms the sweep of window w, fired as f said and finished, and
// returns its timer key ("" when windows are kept).
func (g *Gates) armSweep(ctx context.Context, w window, f *fired, now time.Time) (string, error) {
	if g.h.Retention <= 0 {
		return "", nil
	}
	at := f.At
	if at.IsZero() {
		at = now // fired before outcomes recorded when
	}
	return g.h.PutTimer(ctx, g.sweepName(w), g.h.TimerDue(at.Add(g.h.Retention), now))
}

// sweep deletes fired window w: the markers that name it, its objects
// (the outcome last), then its due timers (timerKeys). Requests: 1 GET of
// the outcome, 1 LIST of the window's objects, per event it listed 1 GET
// and 1 DELETE of its marker, 1 DELETE of its open object and 1 of its
// outcome (and 2 more per event written after it was listed), and the
// timer's DELETE. An outcome already gone is a window swept.
func (g *Gates) sweep(ctx context.Context, w window, timerKeys []string) error {
	f, _, err := object.Read[fired](ctx, g.h.Store, w.firedKey())
	if errors.Is(err, blob.ErrNotFound) {
		return g.h.DropTimers(ctx, timerKeys, "")
	}
	if err != nil {
		return err
	}
	objs, err := g.h.Store.ListAll(ctx, w.dir())
	if err != nil {
		return err
	}
	hashes := slices.Clone(f.Superseded)
	for _, run := range f.Runs {
		for _, k := range run {
			hashes = append(hashes, hashOf(k))
		}
	}
	var rest []string
	for _, o := range objs {
		if o.Key == w.firedKey() {
			continue
		}
		if strings.HasPrefix(o.Key, w.eventsPrefix()) {
			hashes = append(hashes, hashOf(o.Key))
		}
		rest = append(rest, o.Key)
	}
	slices.Sort(hashes)
	if err := g.unmark(ctx, w, slices.Compact(hashes)); err != nil {
		return err
	}
	if err := g.deleteAll(ctx, rest); err != nil {
		return err
	}
	if err := g.deleteAll(ctx, []string{w.firedKey()}); err != nil {
		return err
	}
	return g.h.DropTimers(ctx, timerKeys, "")
}

// unmark deletes the markers of the id hashes that still name window w
// (or an earlier one).
func (g *Gates) unmark(ctx context.Context, w window, hashes []string) error {
	errs := make([]error, len(hashes))
	par.Each(8, len(hashes), func(i int) {
		if len(hashes[i]) < 2 {
			return // no id hash
		}
		key := markKey(w.prefix, hashes[i])
		m, _, err := object.Read[idMark](ctx, g.h.Store, key)
		if errors.Is(err, blob.ErrNotFound) {
			return
		}
		if err != nil {
			errs[i] = err
			return
		}
		if m.N > w.n {
			return // published again since, into a later window
		}
		if err := g.h.Store.Delete(ctx, key); err != nil && !errors.Is(err, blob.ErrNotFound) {
			errs[i] = err
		}
	})
	return errors.Join(errs...)
}

// deleteAll deletes keys (eight at a time), missing ones included.
func (g *Gates) deleteAll(ctx context.Context, keys []string) error {
	return object.DeleteAll(ctx, g.h.Store, keys)
}
