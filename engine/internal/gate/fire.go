package gate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/internal/ctxsleep"
)

// fired is a window's outcome: the events its runs took, by key (in
// publish order; a batch's in chunks of max_size, a run each), and, for a
// debounce, the last one (the others were superseded by it).
type fired struct {
	Runs [][]string `json:"runs"`
	Last string     `json:"last,omitempty"` // debounce: the last event's key
	// Superseded are the id hashes of the events a debounce listed
	// before its last: with the runs' events, the ids whose markers
	// name the window (deleted with it, sweep.go).
	Superseded []string `json:"superseded,omitempty"`
	// At is when the window fired: it is kept Host.Retention from then
	// (zero in outcomes written before it was recorded).
	At time.Time `json:"at,omitzero"`
}

// has tells whether the outcome took the event written at at with id: a
// batch's when one of its runs has the id; a debounce's when the event is
// not after the last (published after it, it would have been last).
func (f *fired) has(at time.Time, id string) bool {
	if f.Last != "" {
		return strings.Compare(eventName(at, id), nameOf(f.Last)) <= 0
	}
	for _, run := range f.Runs {
		for _, k := range run {
			if strings.HasSuffix(k, "-"+idHash(id)) {
				return true
			}
		}
	}
	return false
}

func nameOf(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }

// hashOf is the id hash in an event key.
func hashOf(key string) string { return key[strings.LastIndexByte(key, '-')+1:] }

// eventName is an event object's name in its shard: publish time, then id
// hash, so names order events by publish time, then id.
func eventName(at time.Time, id string) string {
	k := window{}.eventKey(at, id)
	return k[strings.LastIndexByte(k, '/')+1:]
}

// fire closes window w once and starts its runs: seal (move the key's
// state past it), wait Settle, list its events, create its outcome (the
// one conditional write that decides), start the runs, delete the events.
// A firing that dies is redone by the next (its timer stays): every step
// is idempotent, and runs start once per idempotency key.
func (g *Gates) fire(ctx context.Context, w window) (*fired, error) {
	f, _, err := object.Read[fired](ctx, g.h.Store, w.firedKey())
	if err == nil {
		return f, g.finish(ctx, w, f)
	}
	if !errors.Is(err, blob.ErrNotFound) {
		return nil, err
	}
	wait, err := g.seal(ctx, w)
	if err != nil {
		return nil, err
	}
	if err := ctxsleep.Sleep(ctx, wait); err != nil {
		return nil, err
	}
	evs, sizes, err := g.events(ctx, w)
	if err != nil {
		return nil, err
	}
	f = w.outcome(evs, sizes, g.h.MaxInput)
	f.At = g.h.Now()
	if _, err := g.h.Store.Create(ctx, w.firedKey(), object.JSON(f)); errors.Is(err, blob.ErrPreconditionFailed) {
		if f, _, err = object.Read[fired](ctx, g.h.Store, w.firedKey()); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return f, g.finish(ctx, w, f)
}

// seal moves the key's state past window w (when no one did) and returns
// how long to wait before listing: Settle from when the seal was seen
// done (ours, or another's read back), so every write that read the
// state before the seal and took less than Settle is listed. Only
// durations on this instance's clock count, not clock readings.
func (g *Gates) seal(ctx context.Context, w window) (time.Duration, error) {
	for {
		st, ver, err := g.state(ctx, w.prefix)
		if err != nil {
			return 0, err
		}
		if st.N > w.n {
			return g.h.Settle, nil
		}
		next := object.JSON(state{N: w.n + 1, SealedAt: g.h.Now()})
		if ver == "" {
			_, err = g.h.Store.Create(ctx, stateKey(w.prefix), next)
		} else {
			_, err = g.h.Store.Swap(ctx, stateKey(w.prefix), next, ver)
		}
		if err == nil {
			return g.h.Settle, nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) && !errors.Is(err, blob.ErrNotFound) {
			return 0, err
		}
	}
}

// events lists window w's event keys in publish order (then id), each
// id once (its first: a publish retried after its write came back wrote
// it twice).
func (g *Gates) events(ctx context.Context, w window) ([]string, map[string]int64, error) {
	keys, sizes, err := g.keys(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(nameOf(a), nameOf(b)) })
	seen := map[string]bool{}
	return slices.DeleteFunc(keys, func(k string) bool {
		id := hashOf(k)
		dup := seen[id]
		seen[id] = true
		return dup
	}), sizes, nil
}

// keys lists the keys of window w's event objects, and their sizes.
func (g *Gates) keys(ctx context.Context, w window) ([]string, map[string]int64, error) {
	objs, err := g.h.Store.ListAll(ctx, w.eventsPrefix())
	keys, sizes := make([]string, len(objs)), make(map[string]int64, len(objs))
	for i, o := range objs {
		keys[i], sizes[o.Key] = o.Key, o.Size
	}
	return keys, sizes, err
}

// outcome is what window w does with its events: a debounce one run with
// the last; a batch runs of max_size in publish order, each cut short
// before its events' objects (sizes) would pass maxInput bytes, so its
// input list (smaller than their objects) stays within a run's input.
func (w window) outcome(evs []string, sizes map[string]int64, maxInput int) *fired {
	f := &fired{Runs: [][]string{}}
	if len(evs) == 0 {
		return f
	}
	if w.open.Kind == Debounce {
		f.Last = evs[len(evs)-1]
		f.Runs = [][]string{{f.Last}}
		for _, k := range evs[:len(evs)-1] {
			f.Superseded = append(f.Superseded, hashOf(k))
		}
		return f
	}
	var run []string
	var bytes int64
	for _, k := range evs {
		if len(run) == max(1, w.open.MaxSize) || (len(run) > 0 && bytes+sizes[k] > int64(maxInput)) {
			f.Runs, run, bytes = append(f.Runs, run), nil, 0
		}
		run, bytes = append(run, k), bytes+sizes[k]
	}
	f.Runs = append(f.Runs, run)
	return f
}

// finish starts fired window w's runs (each once, by its idempotency key)
// and deletes its events. An event already deleted means an earlier
// finish started every run.
func (g *Gates) finish(ctx context.Context, w window, f *fired) error {
	for i, run := range f.Runs {
		bodies := make([]*eventBody, len(run))
		errs := make([]error, len(run))
		par.Each(8, len(run), func(j int) { bodies[j], _, errs[j] = object.Read[eventBody](ctx, g.h.Store, run[j]) })
		for _, err := range errs {
			if errors.Is(err, blob.ErrNotFound) {
				return nil // deleted after every run started
			}
			if err != nil {
				return err
			}
		}
		input, last := w.input(bodies)
		_, err := g.h.Start(ctx, w.open.Workflow, input, last, w.idemKey(i))
		if ve := (cairn.ValidationError{}); errors.As(err, &ve) {
			g.h.Log.Warn("a window's run cannot start (its input is refused): its events are dropped", "workflow", w.open.Workflow, "window", w.id(), "err", err)
		} else if err != nil {
			return err
		}
	}
	evs, _, err := g.keys(ctx, w)
	if err != nil {
		return err
	}
	return g.deleteAll(ctx, evs)
}

// input is a run's input from its events: a debounce's last payload, a
// batch's list of payloads; and the event the run names (the last).
func (w window) input(bodies []*eventBody) (json.RawMessage, render.Event) {
	last := bodies[len(bodies)-1]
	ev := render.Event{Name: last.Name, ID: last.ID, Payload: last.Payload}
	if w.open.Kind == Debounce {
		return last.Payload, ev
	}
	list := make([]json.RawMessage, len(bodies))
	for i, b := range bodies {
		if list[i] = b.Payload; len(list[i]) == 0 {
			list[i] = json.RawMessage("null")
		}
	}
	return object.JSON(list), ev
}

// Reap visits a window whose timer (timerKeys, named id) is due: it
// fires it when it is due (a debounce quiet for its period, or past its
// timeout; a batch past its timeout, or full) and re-arms its timer for
// its sweep, or re-arms it for when it will be due; a sweep's timer
// deletes the fired window (sweep.go).
func (g *Gates) Reap(ctx context.Context, id string, timerKeys []string, now time.Time) error {
	prefix, n, tag, err := g.parseTimerID(id)
	if err != nil {
		return g.h.DropTimers(ctx, timerKeys, "")
	}
	w := window{prefix: prefix, n: n}
	if strings.HasPrefix(tag, sweepTag) {
		return g.sweep(ctx, w, timerKeys)
	}
	o, _, err := object.Read[opening](ctx, g.h.Store, w.openKey())
	if errors.Is(err, blob.ErrNotFound) {
		return g.h.DropOrphans(ctx, timerKeys, now) // armed by a first event that died before its window opened
	}
	if err != nil {
		return err
	}
	w.open = *o
	due, err := g.due(ctx, w, now)
	if err != nil {
		return err
	}
	if now.Before(due) {
		keep, err := g.h.PutTimer(ctx, g.timerName(w), g.h.TimerDue(due, now))
		if err != nil {
			return err
		}
		return g.h.DropTimers(ctx, timerKeys, keep)
	}
	f, err := g.fire(ctx, w)
	if err != nil {
		return err
	}
	keep, err := g.armSweep(ctx, w, f, now)
	if err != nil {
		return err
	}
	return g.h.DropTimers(ctx, timerKeys, keep)
}

// due is when window w fires: fired or sealed already, now; a debounce
// its period after its last event (at most its timeout after it opened);
// a batch at its timeout, or now when full (and MinWindow old).
func (g *Gates) due(ctx context.Context, w window, now time.Time) (time.Time, error) {
	st, _, err := g.state(ctx, w.prefix)
	if err != nil || st.N > w.n || !now.Before(w.closes()) {
		return now, err
	}
	if w.open.Kind == Batch {
		full, err := g.full(ctx, w)
		if err != nil || !full {
			return w.closes(), err
		}
		return w.open.Opened.Add(cairn.MinWindow), nil // a batch closes by size a second after it opened at the soonest
	}
	evs, _, err := g.events(ctx, w)
	if err != nil {
		return now, err
	}
	last := w.open.Opened
	if len(evs) > 0 {
		if at, ok := eventTime(evs[len(evs)-1]); ok && at.After(last) {
			last = at
		}
	}
	return minTime(last.Add(w.open.Period), w.closes()), nil
}

// eventTime is the publish time in an event key.
func eventTime(key string) (time.Time, bool) {
	name := nameOf(key)
	i := strings.IndexByte(name, '-')
	ms, err := strconv.ParseInt(name[:max(i, 0)], 10, 64)
	return time.UnixMilli(ms), i > 0 && err == nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
