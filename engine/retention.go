package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/engine/internal/attrs"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/retention"
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// Retention: an ended run, with its leases, its idempotency key and its
// timers, is deleted Config.Retention after it ended. No listing finds
// old runs (run ids sort newest first, so the oldest are the last keys
// of runs/): the commit that ends a run arms one more timer, at
// ended_at + retention (nextWake of a terminal run), and the reaper pass
// that finds it due deletes the run. A pass deletes at most
// Config.RetentionBatch runs and leaves the other due timers to the next.

// retentionTimerPrefix marks the timer of an ended run (retention.TimerPrefix).
const retentionTimerPrefix = retention.TimerPrefix

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
// the record and its timers, the retention timer included
// (retention.Purger.TimerKeys). A run still running is a conflict unless
// force, which cancels it first.
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
		if _, err := e.CancelRun(ctx, id, "deleted"); err != nil && !errors.As(err, new(*ConflictError)) {
			return err // (a conflict: it ended meanwhile, deleted anyway)
		}
		if r, err = e.readRun(ctx, id); err != nil {
			return err
		}
	}
	return errs.Unavailable(e.purgeRun(ctx, r, nil))
}

// newPurger wires the deletion of ended runs (engine/internal/retention)
// to the engine.
func newPurger(e *Engine) *retention.Purger {
	return retention.New(retention.Host{
		Store: e.store, Keys: e.keys, Now: e.now, Audit: e.audit,
		ActiveCheckInterval: e.cfg.ActiveCheckInterval, MinTimerLead: timer.Lead,
		DeletePayloads: func(ctx context.Context, run string) error { return e.payloads.DeleteRun(ctx, run) },
		Drop:           func(run string) { e.commits.Cache().Drop(run) },
	})
}

// purgeRun deletes an ended run's objects, the record last but for the
// timers (retention.Purger.Purge). due are timer keys the caller found
// due (the reaper's); they go with the run's other timers.
func (e *Engine) purgeRun(ctx context.Context, r *runRecord, due []string) error {
	run := retention.Run{ID: r.ID, Layout: r.Layout, Workflow: r.Workflow, IdempotencyKey: r.IdempotencyKey,
		TimerAt: r.TimerAt, EndedAt: r.EndedAt, Deadline: r.Deadline, Due: e.retentionDue(r), Index: attrs.Keys(e.keys, r.ID, r.Attrs), Reads: r.Reads}
	for _, st := range r.Steps {
		run.ReadyAt = append(run.ReadyAt, st.ReadyAt) // an ended run's WakeAt are cleared (endRun)
	}
	return e.purger.Purge(ctx, run, due)
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
