package engine

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	bulk "github.com/cairn-dev/cairn/engine/internal/batch"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/gate"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/mapstep"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/engine/internal/schedule"
	"github.com/cairn-dev/cairn/engine/internal/timer"
	"github.com/cairn-dev/cairn/notify"
)

// ReapStats counts what one reaper pass did.
type ReapStats struct {
	TimersDue    int `json:"timers_due"`
	RunsVisited  int `json:"runs_visited"`
	LeasesLost   int `json:"leases_lost"`
	TimedOut     int `json:"attempts_timed_out"`
	Announced    int `json:"announced"`
	TimersFired  int `json:"timers_fired" doc:"Sleeps ended, waits timed out, deadlines passed."`
	Rearmed      int `json:"rearmed"`
	Errors       int `json:"errors"`
	ListRequests int `json:"list_requests"`

	SchedulesFired   int `json:"schedules_fired" doc:"Schedule ticks that started their run."`
	SchedulesSkipped int `json:"schedules_skipped" doc:"Schedule ticks skipped: the previous run still ran (overlap skip)."`
	SchedulesFailed  int `json:"schedules_failed" doc:"Schedule ticks whose run could not be started (see the schedule's last_error)."`
	RunsDeleted      int `json:"runs_deleted" doc:"Ended runs deleted past the retention."`

	deletes *deleteBudget // the pass's retention deletions, shared by its concurrent visits
	missing bool          // the visit found no run (timer.Index.Visited)
}

// ClockMoved: the clock jumped forward (a test clock). Due hints wake
// their claims now, not when their real-time timers fire, and a reaper
// pass also visits the runs whose timer keys (rounded up, at least Lead
// ahead) fall just past the new time, so all that came due fires now.
func (e *Engine) ClockMoved(ctx context.Context) (ReapStats, error) {
	e.hub.WakeDue()
	return e.reap(ctx, timer.Lead+keys.TimerBucket)
}

// Reap runs one reaper pass: it lists the timer index up to now (one LIST
// per 1,000 due timers, one when nothing is due; a GET per group timer),
// visits each due run once, and for each: times it out past its deadline,
// ends due sleeps and waits, recovers expired leases, fails attempts past
// their timeout, announces ready attempts nobody claimed, and re-arms its
// timer. Every change is a compare-and-swap, so passes may overlap with
// each other and with API instances; a pass killed midway leaves its
// timers in place for the next.
func (e *Engine) Reap(ctx context.Context) (ReapStats, error) { return e.reap(ctx, 0) }

// reap is a pass that lists the timers up to ahead past now.
func (e *Engine) reap(ctx context.Context, ahead time.Duration) (ReapStats, error) {
	var stats ReapStats
	defer e.observeReap(time.Now(), &stats)
	now := e.now()
	// Every listing of the layout (one, or the flat one and 16 shards)
	// up to now, merged by due time: see layout.go.
	timers, lists, err := e.scan.DueTimers(ctx, now.Add(ahead))
	stats.ListRequests += lists
	if err != nil {
		return stats, err
	}
	stats.TimersDue = len(timers)
	visits := e.timers.Visits(ctx, timers, retentionTimerPrefix) // see timerName
	// Visit the due runs, reapParallel at a time (see reap_parallel.go):
	// one visit per run, each with its own counters, summed at the end.
	var deletes deleteBudget
	par.Gather(reapParallel, len(visits), func(i int) (local ReapStats) {
		if ctx.Err() != nil {
			return local // the pass ends: the rest wait for the next
		}
		local.deletes = &deletes
		e.reapVisit(ctx, visits[i], now, &local)
		return local
	}, stats.Add)
	return stats, ctx.Err()
}

// reapVisit is one visit of a pass: a schedule, batch, event window, or
// run (also for the group timers that list it: timer.Index.Visited), or
// a group timer that could not be read.
func (e *Engine) reapVisit(ctx context.Context, v timer.Visit, now time.Time, local *ReapStats) {
	what, run, err := "run", v.Name, v.Err
	if err != nil {
		what = "group timer"
	} else if id, ok := schedule.TimerID(run); ok {
		t, serr := e.schedules.Reap(ctx, id, v.Keys, now)
		local.SchedulesFired, local.SchedulesSkipped, local.SchedulesFailed = t.Fired, t.Skipped, t.Failed
		what, run, err = "schedule", id, serr
	} else if id, ok := bulk.TimerID(run); ok { // batches.go
		what, run, err = "batch", id, e.batches.Reap(ctx, id, v.Keys, now)
	} else if id, ok := gate.TimerID(run); ok { // events.go: debounce and batch windows
		what, run, err = "window", id, e.gates.Reap(ctx, id, v.Keys, now)
	} else {
		local.RunsVisited++
		err = e.reapRun(ctx, run, v.Keys, now, local)
		err = e.timers.Visited(ctx, v.Groups, err, local.missing, now)
	}
	if err != nil {
		local.Errors++
		e.log.Warn("reaper: "+what+" visit failed; its timer stays for the next pass", what, run, "err", err)
	}
}

// reapRun visits one run whose timer is due.
func (e *Engine) reapRun(ctx context.Context, run string, timerKeys []string, now time.Time, stats *ReapStats) error {
	r, err := e.readRun(ctx, run)
	if errs.IsNotFound(err) {
		stats.missing = true
		return e.timers.DropOrphans(ctx, timerKeys, now)
	}
	if err != nil {
		return err
	}
	if done, err := e.reapExpired(ctx, r, timerKeys, now, stats); done || err != nil {
		return err
	}
	d, err := e.definition(ctx, r.Workflow, r.rev())
	if err != nil {
		return err
	}
	var leaseWake time.Time
	if !r.Status.Terminal() {
		if err := e.visitSteps(ctx, r, d); err != nil {
			return err
		}
		if err := e.fireTimers(ctx, r, d, now, stats); err != nil {
			return err
		}
		if leaseWake, err = e.checkLeases(ctx, r, d, now, stats); err != nil {
			return err
		}
		// Re-read: the visit may have changed the run.
		if r, err = e.readRun(ctx, run); err != nil {
			return err
		}
	}
	keep := ""
	now = e.now()
	// The next wake-up: the record's own (nextWake), or sooner, the
	// earliest time a lease read above becomes recoverable (its attempt
	// timeout, its expiry plus the recovery window): the record does not
	// hold those, and a visit that came before them must come back then,
	// not one routine period later (TestUnstartedAttemptTimesOutOnTime).
	wake := e.nextWake(r, now)
	if !r.Status.Terminal() && !leaseWake.IsZero() && (wake.IsZero() || leaseWake.Before(wake)) {
		wake = leaseWake
	}
	// A timer a commit of this visit (or a recent one) armed that fires
	// soon enough is not among the due keys deleted below.
	if !wake.IsZero() && !timer.Covered(r.TimerAt, wake, now) {
		if keep, err = e.armTimerAt(ctx, r, wake, now); err != nil {
			return err
		}
		stats.Rearmed++
	}
	return e.timers.Drop(ctx, timerKeys, keep)
}

// fireTimers applies what time alone decides: the run's deadline, and
// the due times of started steps (a sleep's end, a wait's timeout: each
// kind's fire, see stepKinds).
func (e *Engine) fireTimers(ctx context.Context, r *runRecord, d *definition, now time.Time, stats *ReapStats) error {
	fire := r.Deadline != nil && !now.Before(*r.Deadline)
	for _, st := range r.Steps {
		if k := activeKinds[st.Status]; k != nil && k.fire != nil && st.WakeAt != nil && !now.Before(*st.WakeAt) {
			fire = true
		}
	}
	if !fire || r.Status == cairn.RunPaused { // a paused run's fire at its resume (pause.go)
		return nil
	}
	fired, err := mutate(ctx, e.commits, r.ID, func(r *runRecord, fx *effects) (int, error) {
		if e.checkDeadline(r, fx.now) {
			return 1, nil
		}
		fired := e.fireDue(r, d, fx)
		e.advance(r, d, fx)
		return fired, nil
	})
	stats.TimersFired += fired
	return err
}

// fireDue fires the started steps of a running r whose due time has
// passed (each kind's fire) and returns how many.
func (e *Engine) fireDue(r *runRecord, d *definition, fx *effects) (fired int) {
	for _, s := range d.Steps {
		st := r.Steps[s.ID]
		if st.WakeAt == nil || fx.now.Before(*st.WakeAt) || r.Status != cairn.RunRunning {
			continue
		}
		if k := kindOf(&s); k.fire != nil && st.Status == k.active {
			k.fire(e, r, &s, fx)
			fired++
		}
	}
	return fired
}

// reaperLeaseReads is how many lease reads one run's visit makes at once.
const reaperLeaseReads = 32

// checkLeases looks at the lease of every ready attempt (its object, or
// the record's inline lease: inline.go): none yet means
// unclaimed (announce it again once AnnounceAfter passed); an active one
// past its expiry and the recovery window, or past its attempt timeout,
// is reclaimed. It returns the earliest time a live lease it read becomes
// recoverable (zero: none), for the run's next visit.
func (e *Engine) checkLeases(ctx context.Context, r *runRecord, d *definition, now time.Time, stats *ReapStats) (wake time.Time, _ error) {
	reads := e.readyLeases(ctx, r, d, now)
	var unclaimed []notify.Hint
	// Lost leases are fenced and recovered concurrently (each recovery is
	// a commit of the run: concurrent ones share group commits), so a wide
	// fan-out's lost leases come back in a few commits, not one each.
	var rec errgroup.Group
	rec.SetLimit(reaperLeaseReads)
	var mu sync.Mutex // guards stats
	defer func() {
		_ = rec.Wait()
		if len(unclaimed) > 0 {
			e.announce(unclaimed)
			stats.Announced += len(unclaimed)
		}
	}()
	for _, rd := range reads {
		st, l := r.Steps[rd.step], rd.l
		if isNotFound(rd.err) {
			if r.Status == cairn.RunPaused {
				continue // announced at its resume (pause.go)
			}
			if st.ReadyAt == nil || now.Sub(*st.ReadyAt) >= e.cfg.AnnounceAfter {
				unclaimed = append(unclaimed, notify.Hint{Run: r.ID, Workflow: r.Workflow, Version: r.Version, Step: rd.step, Attempt: st.Attempt, Priority: stepPriority(r, d, rd.step)})
			}
			continue
		}
		if rd.err != nil {
			return time.Time{}, rd.err
		}
		if l.State == leaseCompleted {
			// A deferred complete whose fold did not happen (deferred.go).
			if _, err := e.fold(ctx, leaseToken{Run: l.Run, Step: l.Step, Attempt: l.Attempt, Worker: l.Worker}, l); err != nil {
				if _, rejected := IsRejection(err); !rejected {
					return time.Time{}, err
				}
			}
			continue
		}
		why, at := l.Verdict(now, e.cfg.RecoveryWindow)
		if why == "" {
			if !at.IsZero() && (wake.IsZero() || at.Before(wake)) {
				wake = at
			}
			continue
		}
		rec.Go(func() error { return e.reclaim(ctx, r, d, l, rd.ver, why, stats, &mu) })
	}
	return wake, rec.Wait()
}

// leaseRead is one ready attempt's lease as checkLeases read it.
type leaseRead struct {
	step string
	l    *leaseRecord
	ver  blob.Version
	err  error
}

// readyLeases reads the lease of every ready attempt of r (map items and
// on_failure steps included) whose retry backoff is over, concurrently (a
// wide fan-out has thousands: one at a time, a visit took minutes and
// re-announced unclaimed steps at one per store round trip), in the
// definition's order.
func (e *Engine) readyLeases(ctx context.Context, r *runRecord, d *definition, now time.Time) []leaseRead {
	ids := make([]string, 0, len(d.Steps))
	for _, s := range d.Steps {
		ids = append(ids, s.ID)
	}
	ids = append(ids, mapstep.ItemSteps(r.Steps)...) // running map items (mapstep.go)
	ids = append(ids, compSteps(r)...)               // on_failure steps (compensate.go)
	var reads []leaseRead
	for _, id := range ids {
		st := r.Steps[id]
		if st == nil || st.Status != cairn.StepReady || st.Attempt == 0 {
			continue
		}
		if st.ReadyAt != nil && st.ReadyAt.After(now) {
			continue // retry backoff: announced when due
		}
		reads = append(reads, leaseRead{step: id})
	}
	par.Each(reaperLeaseReads, len(reads), func(i int) {
		key := e.keys.LeaseOf(r.Layout, r.ID, reads[i].step, r.Steps[reads[i].step].Attempt)
		l, ver, err := readJSON[leaseRecord](ctx, e.store, key)
		if l != nil {
			l.Key = key
		}
		if isNotFound(err) {
			// No object: a lease in the record (inline.go) is checked
			// and recovered as an object would be; the fence creates
			// its object expired.
			if il := r.Steps[reads[i].step].liveInline(); il != nil {
				l, ver, err = e.inlineRecord(r, reads[i].step, il), inlineVersion, nil
			}
		}
		reads[i].l, reads[i].ver, reads[i].err = l, ver, err
	})
	return reads
}

// reclaim takes lease l back for why: fenced first when active (from
// then on its worker's heartbeats and started are refused, so the
// decision cannot race them), then the attempt recovered on the run
// record and its concurrency slots freed. A fence that loses to a
// heartbeat is not an error: the next pass looks again. mu guards stats.
func (e *Engine) reclaim(ctx context.Context, r *runRecord, d *definition, l *leaseRecord, ver blob.Version, why string, stats *ReapStats, mu *sync.Mutex) error {
	if l.State == leaseActive {
		if err := e.leases.Fence(ctx, l, ver, why); err != nil {
			if errors.Is(err, blob.ErrPreconditionFailed) {
				return nil // a heartbeat won: look again next pass
			}
			return err
		}
	}
	var got ReapStats
	if err := e.recoverAttempt(ctx, r.ID, d, l, why, &got); err != nil {
		return err
	}
	if why == "expired" {
		e.workers.Gone(l.Worker, l.ExpiresAt) // its heartbeats stopped: gone until it calls again
	}
	mu.Lock()
	stats.TimedOut += got.TimedOut
	stats.LeasesLost += got.LeasesLost
	mu.Unlock()
	e.releaseSlots(ctx, l) // the attempt is over (limits.go)
	return nil
}

// recoverAttempt applies a reclaimed lease to the run: see
// recoverMutation.
func (e *Engine) recoverAttempt(ctx context.Context, run string, d *definition, l *leaseRecord, why string, stats *ReapStats) error {
	outcome, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (cairn.AttemptOutcome, error) {
		return e.recoverMutation(r, d, l, why, fx), nil
	})
	switch outcome {
	case cairn.OutcomeTimedOut:
		stats.TimedOut++
	case cairn.OutcomeLost:
		stats.LeasesLost++
	}
	return err
}

// recoverMutation ends a fenced lease's attempt in the run record, when it
// is still the step's current attempt, and returns how ("" when it was
// already decided). An attempt timeout is a failure of class timeout; a
// lost lease re-queues the step (at_least_once, or at_most_once that
// never started) or fails it (at_most_once that had started), and
// dead-letters it after max_deliveries losses. A started at_most_once
// attempt is never offered again, timeout or not (see failAttempt).
func (e *Engine) recoverMutation(r *runRecord, d *definition, l *leaseRecord, why string, fx *effects) cairn.AttemptOutcome {
	s := d.Step(l.Step)
	st := r.Steps[l.Step]
	if s == nil || r.Status.Terminal() || st == nil || st.Status != cairn.StepReady || st.Attempt != l.Attempt {
		return "" // already decided
	}
	started := l.StartedAt != nil
	claimed, ended := l.ClaimedAt, fx.now
	a := st.attempt(l.Attempt)
	a.Worker, a.ClaimedAt, a.StartedAt, a.EndedAt = l.Worker, &claimed, l.StartedAt, &ended
	r.journal(claimed, cairn.JournalEntry{Type: cairn.JournalStepClaimed, Step: l.Step, Attempt: l.Attempt, Worker: l.Worker})
	if why == "timeout" {
		a.Outcome = cairn.OutcomeTimedOut
		info := cairn.ErrorInfo{Class: cairn.ClassTimeout, Message: "attempt exceeded its timeout of " + s.Timeout.D().String()}
		a.Error = &info
		e.failAttempt(r, d, l.Step, l.Attempt, info, l.Worker, started, fx)
		return cairn.OutcomeTimedOut
	}
	a.Outcome = cairn.OutcomeLost
	st.Lost++
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalLeaseLost, Step: l.Step, Attempt: l.Attempt, Worker: l.Worker,
		Message: "no heartbeat since " + l.ExpiresAt.Add(-e.cfg.LeaseTTL).Format(time.RFC3339Nano)})
	max := s.MaxDeliveries
	if max == 0 {
		max = cairn.DefaultMaxDeliveries
	}
	switch {
	case s.EffectiveDelivery() == cairn.AtMostOnce && started:
		info := cairn.ErrorInfo{Class: cairn.ClassLost, Message: "the worker holding this at_most_once attempt stopped answering after it started; it is not run again"}
		a.Error = &info
		e.failAttempt(r, d, l.Step, l.Attempt, info, l.Worker, started, fx)
	case st.Lost >= max:
		info := cairn.ErrorInfo{Class: cairn.ClassDeadLettered, Message: "lease lost " + strconv.Itoa(st.Lost) + " times (max_deliveries)"}
		a.Error = &info
		e.failAttempt(r, d, l.Step, l.Attempt, info, l.Worker, started, fx)
	default:
		e.scheduleAttempt(r, d, l.Step, fx.now, fx)
	}
	return cairn.OutcomeLost
}
