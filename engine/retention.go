package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Retention: an ended run, with its leases, its idempotency key and its
// timers, is deleted Config.Retention after it ended. No listing finds
// old runs (run ids sort newest first, so the oldest are the last keys
// of runs/): the commit that ends a run arms one more timer, at
// ended_at + retention (nextWake of a terminal run), and the reaper pass
// that finds it due deletes the run. A pass deletes at most
// Config.RetentionBatch runs and leaves the other due timers to the next.

// retentionTimerPrefix marks the timer of an ended run
// (timers/<due>/r-<run>): the claims' fallback scan, which reads the runs
// of the first timers in the index to find lost work, skips such a name
// without a read (it is no run id), so ended runs waiting for their
// retention cost idle instances nothing. The reaper visits the run.
const retentionTimerPrefix = "r-"

// timerName is the run segment of r's timer keys.
func timerName(r *runRecord) string {
	if r.Status.Terminal() {
		return retentionTimerPrefix + r.ID
	}
	return r.ID
}

// Retention defaults.
const (
	DefaultRetention      = 30 * 24 * time.Hour
	DefaultRetentionBatch = 100
)

// retentionDue is when an ended run may be deleted (zero: never).
func (e *Engine) retentionDue(r *runRecord) time.Time {
	if !r.Status.Terminal() || r.EndedAt == nil || e.cfg.Retention <= 0 {
		return time.Time{}
	}
	return r.EndedAt.Add(e.cfg.Retention)
}

// DeleteRun deletes one ended run now: its leases, its idempotency key,
// the record and its timers, the retention timer included (runTimerKeys).
// A run still running is a conflict unless force, which cancels it first.
func (e *Engine) DeleteRun(ctx context.Context, id string, force bool) error {
	if err := keys.RunID.Check("run", id); err != nil {
		return err
	}
	r, err := e.readRun(ctx, id)
	if err != nil {
		return err
	}
	if !r.Status.Terminal() {
		if !force {
			return &ConflictError{Message: fmt.Sprintf("run %s is %s: cancel it first, or delete with force", id, r.Status)}
		}
		if _, err := e.CancelRun(ctx, id, "deleted"); err != nil {
			var conflict *ConflictError
			if !errors.As(err, &conflict) { // ended meanwhile: delete it anyway
				return err
			}
		}
		if r, err = e.readRun(ctx, id); err != nil {
			return err
		}
	}
	if err := e.purgeRun(ctx, r, nil); err != nil {
		return unavailable(err)
	}
	return nil
}

// purgeRun deletes an ended run's objects, the record last but for the
// timers: a purge that dies midway leaves the record, and with it the
// timer that brings the reaper back to finish. due are timer keys the
// caller found due (the reaper's); they go with the run's other timers
// (runTimerKeys).
func (e *Engine) purgeRun(ctx context.Context, r *runRecord, due []string) error {
	leases, err := e.store.ListAll(ctx, e.keys.LeasesOfRun(r.Layout, r.ID))
	if err != nil {
		return err
	}
	maps, err := e.store.ListAll(ctx, e.keys.MapPrefix(r.ID)) // map items and shards (mapstep.go)
	if err != nil {
		return err
	}
	leases = append(leases, maps...)
	for _, l := range leases {
		if err := e.store.Delete(ctx, l.Key); err != nil && !isNotFound(err) {
			return err
		}
	}
	if r.IdempotencyKey != "" {
		ikey := e.keys.Idempotency(r.Workflow, r.IdempotencyKey)
		o, err := e.store.Get(ctx, ikey)
		switch {
		case err == nil && string(o.Data) == r.ID:
			if err := e.store.Delete(ctx, ikey); err != nil && !isNotFound(err) {
				return err
			}
		case err != nil && !isNotFound(err):
			return err
		}
	}
	if err := e.payloads.DeleteRun(ctx, r.ID); err != nil {
		return err
	}
	if err := e.store.Delete(ctx, e.keys.RunOf(r.Layout, r.ID)); err != nil && !isNotFound(err) {
		return err
	}
	e.commits.Cache().Drop(r.ID)
	timers, err := e.runTimerKeys(ctx, r, due)
	if err != nil {
		return err
	}
	for _, key := range timers {
		if err := e.store.Delete(ctx, key); err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

// runTimerKeys are the keys of r's timers that purgeRun deletes, the
// caller's due keys among them, each once. A timer key starts with its due
// time, so only a listing of the whole timer index (every run's timers)
// could find all of one run's; instead the keys are computed from the
// record, one per distinct due time and name, in both layouts (the
// sharded one also deletes the flat key, as timerKeys):
//
//   - the newest timer a commit armed (TimerAt), under either name;
//   - the retention timer, at ended_at + retention: the reaper visit that
//     finds an ended run's last timer spent arms it without recording it
//     in TimerAt (a visit writes no record);
//   - the deadline and the steps' retry backoffs still ahead: ending the
//     run arms the retention timer, which supersedes a later one as
//     TimerAt (a far deadline), and a superseded timer stays until due;
//
// and one listing: the reaper's routine re-arms of a running run (a ready
// or leased step's visit every ActiveCheckInterval) are not recorded
// either, and the last one may be due up to ActiveCheckInterval +
// minTimerLead + keys.TimerBucket after the run ended. While that window is
// ahead, its timers are listed (recentTimers).
//
// Cost: 3 DELETEs (6 sharded) plus 1 (2) per distinct future wake-up of
// the record, and, for a run that ended less than that window ago (a
// forced delete always), at most keys.MaxTimerWindowLists listings (twice that
// sharded: the run's shard and the flat keys), each of the timers due in
// a block of about the window's length. Left for the reaper, which
// drops a due timer whose run is gone (dropOrphanTimers): timers already
// due, a timer written less than minTimerLead before its due time (its
// key is then later: a retention timer armed after the retention
// passed), an attempt's timeout timer (armAt; its time is in the lease),
// a superseded sleep's or wait timeout's timer (ending the run clears
// their WakeAt), and a retention timer armed under another
// Config.Retention.
func (e *Engine) runTimerKeys(ctx context.Context, r *runRecord, due []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	addKey := func(key string) {
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	add := func(at time.Time, name string) {
		for _, key := range e.keys.TimerKeys(at, name) {
			addKey(key)
		}
	}
	for _, key := range due {
		addKey(key)
	}
	if r.TimerAt != nil {
		add(*r.TimerAt, r.ID)
		add(*r.TimerAt, retentionTimerPrefix+r.ID)
	}
	// A due time's key is the due time rounded up to its bucket (timerDue),
	// unless it was armed less than minTimerLead ahead (then later: left
	// to the reaper, below).
	if at := e.retentionDue(r); !at.IsZero() {
		add(ceilTo(at, keys.TimerBucket), retentionTimerPrefix+r.ID)
	}
	now := e.now()
	future := func(t *time.Time) {
		if t != nil && t.After(now) {
			add(ceilTo(*t, keys.TimerBucket), r.ID)
		}
	}
	future(r.Deadline)
	for _, st := range r.Steps {
		future(st.ReadyAt) // an ended run's WakeAt are cleared (endRun)
	}
	recent, err := e.recentTimers(ctx, r, now)
	for _, key := range recent {
		addKey(key)
	}
	return out, err
}

// recentTimers lists the plain timers of ended run r due from its end to
// ActiveCheckInterval + minTimerLead + keys.TimerBucket later, nothing once
// that is past. The window is covered by at most keys.MaxTimerWindowLists
// decimal prefixes of the due time (timers/<s>/<ms-prefix>), the smallest
// blocks that do, so each LIST reads the timers of one shard due within a
// few windows' length.
func (e *Engine) recentTimers(ctx context.Context, r *runRecord, now time.Time) ([]string, error) {
	if r.EndedAt == nil {
		return nil, nil
	}
	hi := r.EndedAt.Add(e.cfg.ActiveCheckInterval + minTimerLead + keys.TimerBucket)
	if !hi.After(now) {
		return nil, nil
	}
	var out []string
	for _, prefix := range e.keys.TimerWindow(r.EndedAt.Truncate(keys.TimerBucket), hi, r.ID) {
		objs, err := e.store.ListAll(ctx, prefix)
		if err != nil {
			return out, err
		}
		for _, o := range objs {
			if _, name, ok := e.keys.ParseTimer(o.Key); ok && name == r.ID {
				out = append(out, o.Key)
			}
		}
	}
	return out, nil
}

// reapExpired deletes r when its retention has passed; it reports whether
// the visit is done (deleted, or left for the next pass when this pass
// deleted its batch).
func (e *Engine) reapExpired(ctx context.Context, r *runRecord, timerKeys []string, now time.Time, stats *ReapStats) (bool, error) {
	due := e.retentionDue(r)
	if due.IsZero() || now.Before(due) {
		return false, nil
	}
	if !stats.takeDelete(e.cfg.RetentionBatch) {
		return true, nil // the timer stays due: the next pass
	}
	if err := e.purgeRun(ctx, r, timerKeys); err != nil {
		return true, err
	}
	stats.RunsDeleted++
	return true, nil
}
