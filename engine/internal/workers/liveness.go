package workers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// Liveness (docs/DECISIONS.md, section 47). A worker that calls (claims,
// heartbeats) is noted in the memory of the instance it calls, at most
// once per SeenEvery; its record is written only when that is a change:
// its last_seen_at is older than RefreshEvery, or the reaper marked it gone
// since. An idle worker therefore writes nothing for RefreshEvery at a
// time, and an instance reads its record only as the claim cache expires
// (CacheTTL). A worker counts as alive for AliveWindow after it was last
// seen, by the record or by this instance's memory; one that stopped, or
// that the reaper found gone after it was last seen, is gone at once.

const (
	// SeenEvery is how often an instance notes a worker's call in its
	// memory and asks whether the record needs writing (in the
	// background, from the cached record: no request while it does not).
	SeenEvery = time.Minute
	// RefreshEvery is how old a worker's last_seen_at gets before a call
	// of the worker rewrites it: an idle worker's one write per period.
	RefreshEvery = 6 * time.Hour
	// ExpireAfter is how long after the alive window ends a worker's
	// record is kept: a listing that finds a record older deletes it.
	ExpireAfter = time.Hour
)

// AliveWindow is how long after it was last seen a worker counts as
// alive: two refresh periods (a record is refreshed by the first call
// after it turned RefreshEvery old, seen through a cached copy up to
// CacheTTL old) plus slack, the longest a live worker goes between calls.
func AliveWindow(slack time.Duration) time.Duration { return 2*RefreshEvery + slack }

// seenAt is when rec says its worker was last seen.
func (rec *Record) seenAt() time.Time {
	if rec.LastSeenAt != nil && rec.LastSeenAt.After(rec.RegisteredAt) {
		return *rec.LastSeenAt
	}
	return rec.RegisteredAt
}

// goneSince reports whether the reaper marked the worker gone at or after
// seen.
func (rec *Record) goneSince(seen time.Time) bool {
	return rec.GoneAt != nil && !rec.GoneAt.Before(seen)
}

// lastSign is the last thing rec says happened to its worker.
func (rec *Record) lastSign() time.Time {
	t := rec.seenAt()
	for _, at := range []*time.Time{rec.StoppedAt, rec.GoneAt} {
		if at != nil && at.After(t) {
			t = *at
		}
	}
	return t
}

// stale reports whether a call of rec's worker at now is a change to
// record: it is not stopped, and was marked gone since it was last seen or
// was last seen RefreshEvery ago.
func (rec *Record) stale(now time.Time) bool {
	seen := rec.seenAt()
	return rec.StoppedAt == nil && (rec.goneSince(seen) || now.Sub(seen) >= RefreshEvery)
}

// LastSeen is when this instance last noted worker's call.
func (r *Registry) LastSeen(worker string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen.Peek(worker)
}

// Seen notes, at most once per SeenEvery per instance, that a worker
// called, and when its record says otherwise (stale), records the call. It
// runs in the background: a claim or heartbeat never waits for it, and a
// failure only delays the record.
func (r *Registry) Seen(worker string) {
	now := r.now()
	r.mu.Lock()
	if last, ok := r.seen.Get(worker); ok && now.Sub(last) < SeenEvery && !now.Before(last) {
		r.mu.Unlock()
		return
	}
	r.seen.Put(worker, now)
	r.mu.Unlock()
	r.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cw, err := r.Get(ctx, worker) // cached: a claim just read it
		if err != nil || !cw.Rec.stale(now) {
			return
		}
		rec := *cw.Rec
		rec.LastSeenAt = &now
		r.swap(ctx, &rec, cw.ver, "recording a worker sighting failed")
	})
}

// Gone records that the reaper found a lease of worker lost at: its
// heartbeats stopped, so it is listed as gone until it calls again. One
// read and one conditional write, in the background, and none when the
// record already says so or says it was seen later.
func (r *Registry) Gone(worker string, at time.Time) {
	r.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec, ver, err := object.Read[Record](ctx, r.store, r.keys.Worker(worker))
		if err != nil || rec.StoppedAt != nil || rec.goneSince(rec.seenAt()) || rec.seenAt().After(at) {
			return
		}
		rec.GoneAt = &at
		r.swap(ctx, rec, ver, "recording a worker gone failed")
	})
}

// swap writes rec over version ver, conditionally: a registration or
// another write that changed the record meanwhile wins, and the instance
// reads it again next time.
func (r *Registry) swap(ctx context.Context, rec *Record, ver blob.Version, what string) {
	if ver == "" {
		return
	}
	nver, err := r.store.Swap(ctx, r.keys.Worker(rec.ID), object.JSON(rec), ver)
	if err != nil {
		r.forget(rec.ID)
		if !errors.Is(err, blob.ErrPreconditionFailed) {
			r.log.Debug(what, "worker", rec.ID, "err", err)
		}
		return
	}
	r.cache(rec, nver)
}

// versioned is a record List read, at its version.
type versioned struct {
	rec *Record
	ver blob.Version
}

// List lists the registered workers; one counts as alive when it was seen
// within the alive window and is neither stopped nor gone since. It reads
// only the records whose version changed since this instance last read
// them (one LIST, and a GET per new or changed record), and deletes, in
// the background, those whose last sign is older than the alive window
// plus ExpireAfter.
func (r *Registry) List(ctx context.Context) ([]cairn.WorkerInfo, error) {
	objs, err := r.store.ListAll(ctx, r.keys.WorkersPrefix())
	if err != nil {
		return nil, err
	}
	out := []cairn.WorkerInfo{}
	var expired []string
	for _, o := range objs {
		rec, err := r.readAt(ctx, o)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", o.Key, err)
		}
		wi := r.info(rec)
		if !wi.Alive && r.now().Sub(latest(rec.lastSign(), wi.LastSeenAt)) > r.Alive+ExpireAfter {
			expired = append(expired, o.Key)
			continue
		}
		out = append(out, wi)
	}
	r.expire(expired)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readAt is the record o lists: the one read before when its version is
// the same, else read now.
func (r *Registry) readAt(ctx context.Context, o blob.Attributes) (*Record, error) {
	r.mu.Lock()
	v, ok := r.read.Get(o.Key)
	r.mu.Unlock()
	if ok && v.ver == o.Version {
		return v.rec, nil
	}
	rec, ver, err := object.Read[Record](ctx, r.store, o.Key)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.read.Put(o.Key, versioned{rec, ver})
	r.mu.Unlock()
	return rec, nil
}

// info is rec as the workers list shows it, with this instance's memory
// of the worker's calls: a call noted after the record's last_seen_at
// counts, unless the worker stopped.
func (r *Registry) info(rec *Record) cairn.WorkerInfo {
	seen := rec.seenAt()
	if t, ok := r.LastSeen(rec.ID); ok && t.After(seen) && rec.StoppedAt == nil {
		seen = t
	}
	wi := cairn.WorkerInfo{ID: rec.ID, RegisteredAt: rec.RegisteredAt, Labels: rec.Labels, Workflows: []string{}, LastSeenAt: seen,
		Alive: r.now().Sub(seen) <= r.Alive && rec.StoppedAt == nil && !rec.goneSince(seen), StoppedAt: rec.StoppedAt}
	for _, w := range rec.Workflows {
		wi.Workflows = append(wi.Workflows, w.String())
	}
	return wi
}

// expire deletes the records at keys, in the background. A worker whose
// record is deleted while it still runs is told so on its next call, and
// registers again.
func (r *Registry) expire(keys []string) {
	if len(keys) == 0 {
		return
	}
	r.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, k := range keys {
			if err := r.store.Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
				r.log.Debug("deleting an expired worker record failed", "worker", strings.TrimPrefix(k, r.keys.WorkersPrefix()), "err", err)
				continue
			}
			r.forget(strings.TrimPrefix(k, r.keys.WorkersPrefix()))
		}
	})
}

// Serving returns, for each workflow@version a live worker serves (one
// seen within the alive window), the labels of each such worker, from a reading at
// most LiveTTL old; ok is false when the workers list cannot be read
// (then nothing is claimed about liveness). A registration here forgets
// the reading.
func (r *Registry) Serving(ctx context.Context) (map[string][]map[string]string, bool) {
	c := &r.live
	c.mu.Lock()
	defer c.mu.Unlock()
	now := r.now()
	if c.served != nil && now.Sub(c.at) < LiveTTL && !now.Before(c.at) {
		return c.served, true
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, err := r.List(ctx)
	if err != nil {
		r.log.Debug("reading the workers list for liveness failed", "err", err)
		return nil, false
	}
	served := map[string][]map[string]string{}
	for _, w := range ws {
		if !w.Alive {
			continue
		}
		for _, id := range w.Workflows {
			served[id] = append(served[id], w.Labels)
		}
	}
	c.served, c.at = served, now
	return served, true
}
