package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
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
// the record and its timer. A run still running is a conflict unless
// force, which cancels it first.
func (e *Engine) DeleteRun(ctx context.Context, id string, force bool) error {
	if err := runIDRule.check("run", id); err != nil {
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
	if err := e.purgeRun(ctx, r); err != nil {
		return unavailable(err)
	}
	return nil
}

// purgeRun deletes an ended run's objects, the record last: a purge that
// dies midway leaves the record, and with it the timer that brings the
// reaper back to finish.
func (e *Engine) purgeRun(ctx context.Context, r *runRecord) error {
	leases, err := e.store.ListAll(ctx, e.keys.leasesOfRun(r))
	if err != nil {
		return err
	}
	maps, err := e.store.ListAll(ctx, e.keys.mapPrefix(r.ID)) // map items and shards (mapstep.go)
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
		ikey := e.keys.idempotency(r.Workflow, r.IdempotencyKey)
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
	if err := e.deletePayloads(ctx, r.ID); err != nil {
		return err
	}
	if err := e.store.Delete(ctx, e.keys.runOf(r)); err != nil && !isNotFound(err) {
		return err
	}
	e.commits.cache.drop(r.ID)
	if r.TimerAt != nil {
		for _, name := range []string{r.ID, retentionTimerPrefix + r.ID} {
			for _, key := range e.keys.timerKeys(*r.TimerAt, name) {
				if err := e.store.Delete(ctx, key); err != nil && !isNotFound(err) {
					return err
				}
			}
		}
	}
	return nil
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
	if err := e.purgeRun(ctx, r); err != nil {
		return true, err
	}
	stats.RunsDeleted++
	return true, e.dropTimers(ctx, timerKeys, "")
}

func (k keys) leasesOf(run string) string { return k.prefix + "leases/" + run + "/" }
