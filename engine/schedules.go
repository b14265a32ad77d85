package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones on images without /usr/share/zoneinfo

	"github.com/robfig/cron/v3"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Schedules start runs of a workflow on a cron calendar. A schedule is
// one object, schedules/<id>, changed only by compare-and-swap; the reaper
// learns when one is due from the timer index it already lists
// (timers/<due>/s-<id>), so a pass with no schedule due costs no request
// more than before. Firing a tick is two CASes around an idempotent start:
//
//  1. claim: CAS the record from {next_at: T} to {pending: T, next_at: T'}
//     (the timer for T' is written first, so a crash never strands it);
//  2. start the run with the idempotency key schedule/<id>/<created>/<T>:
//     however many reapers race, the bucket's create-only idempotency key
//     admits one run for the tick;
//  3. finish: CAS {pending: nil, last_run: run}.
//
// A reaper that finds a pending tick (its claimer died, or lost the race
// to finish) redoes 2 and 3, which the idempotency key makes harmless.

// Bounds of schedules.
const (
	// ScheduleIDPattern: schedule ids are part of keys (schedules/<id>).
	ScheduleIDPattern     = `^[A-Za-z0-9][A-Za-z0-9_.-]*$`
	MaxScheduleIDLength   = 128
	MaxBackfillTicks      = 100
	MinScheduleInterval   = time.Minute
	maxTickSteps          = 100_000 // catch-up iterations of the calendar in one visit
	scheduleTimerPrefix   = "s-"    // run ids are ULIDs: no "-", no collision
	maxScheduleSwapErrors = 4
)

var scheduleIDRule = keys.NewRule(ScheduleIDPattern, MaxScheduleIDLength)

// cronParser reads the five standard fields and descriptors (@daily,
// @every 1h). Time zones come from the time_zone field, never from the
// expression (CRON_TZ= is refused).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// The API's schedule views (the root package's views.go).
type (
	ScheduleRequest = cairn.ScheduleRequest
	Schedule        = cairn.Schedule
	SchedulePage    = cairn.SchedulePage
	BackfillRequest = cairn.BackfillRequest
	BackfillTick    = cairn.BackfillTick
	BackfillResult  = cairn.BackfillResult
)

// Overlap policies (cairn.Overlap*).
const (
	OverlapSkip           = cairn.OverlapSkip
	OverlapAllow          = cairn.OverlapAllow
	OverlapCancelPrevious = cairn.OverlapCancelPrevious
)

// scheduleRecord is what schedules/<id> holds: the view itself.
type scheduleRecord = Schedule

func scheduleTimerName(id string) string { return scheduleTimerPrefix + id }
func scheduleTimerID(name string) (string, bool) {
	return strings.CutPrefix(name, scheduleTimerPrefix)
}

// calendar is a parsed cron expression in its time zone.
type calendar struct {
	s   cron.Schedule
	loc *time.Location
}

func parseCalendar(expr, tz string) (calendar, error) {
	if strings.Contains(expr, "TZ=") {
		return calendar{}, &InvalidError{Field: "cron", Message: "name the time zone in time_zone, not in the expression"}
	}
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return calendar{}, &InvalidError{Field: "time_zone", Message: fmt.Sprintf("%q is not an IANA time zone", tz)}
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return calendar{}, &InvalidError{Field: "cron", Message: err.Error()}
	}
	switch cs := s.(type) {
	case *cron.SpecSchedule:
		cs.Location = loc
	case cron.ConstantDelaySchedule:
		if cs.Delay < MinScheduleInterval {
			return calendar{}, &InvalidError{Field: "cron", Message: fmt.Sprintf("@every %v is shorter than %v", cs.Delay, MinScheduleInterval)}
		}
	}
	return calendar{s: s, loc: loc}, nil
}

// next is the first tick after t (zero when the calendar has none). As
// in Vixie cron, a cron expression never fires twice for one wall-clock
// time: when clocks go back, ticks whose local time already passed are
// skipped (a daily 01:30 fires once on the night the hour repeats).
func (c calendar) next(t time.Time) time.Time {
	_, spec := c.s.(*cron.SpecSchedule)
	for range 2000 {
		n := c.s.Next(t.In(c.loc))
		if n.IsZero() {
			return n
		}
		if !spec || wall(n, c.loc).After(wall(t, c.loc)) {
			return n.UTC()
		}
		t = n
	}
	return time.Time{}
}

// wall is t's local date and time in loc, read as if it were UTC.
func wall(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// latest returns the newest tick at or before now, walking from next (a
// due tick), and how many ticks it passed over.
func (c calendar) latest(next, now time.Time) (time.Time, int64) {
	tick, missed := next, int64(0)
	for range maxTickSteps {
		n := c.next(tick)
		if n.IsZero() || n.After(now) {
			break
		}
		tick, missed = n, missed+1
	}
	return tick, missed
}

func scheduleCalendar(s *Schedule) (calendar, error) { return parseCalendar(s.Cron, s.TimeZone) }

// tickKey names a tick's run. The creation time keeps a schedule
// deleted and created again under its id from meeting the old runs.
func tickKey(s *Schedule, tick time.Time) string {
	return "schedule/" + s.ID + "/" + strconv.FormatInt(s.CreatedAt.UnixNano(), 10) + "/" + tick.UTC().Format(time.RFC3339)
}

func (e *Engine) readSchedule(ctx context.Context, id string) (*scheduleRecord, blob.Version, error) {
	s, v, err := readJSON[scheduleRecord](ctx, e.store, e.keys.Schedule(id))
	if isNotFound(err) {
		return nil, "", &NotFoundError{What: "schedule", ID: id}
	}
	return s, v, err
}

// CreateSchedule stores a new schedule and arms its first tick.
func (e *Engine) CreateSchedule(ctx context.Context, req ScheduleRequest) (*Schedule, error) {
	now := e.now()
	if req.ID == "" {
		req.ID = strings.ToLower(newRunID(now))
	}
	if err := scheduleIDRule.Check("id", req.ID); err != nil {
		return nil, err
	}
	if err := e.checkStartTarget(req.Workflow, req.Version, req.Input); err != nil {
		return nil, err
	}
	switch req.Overlap {
	case "":
		req.Overlap = OverlapSkip
	case OverlapSkip, OverlapAllow, OverlapCancelPrevious:
	default:
		return nil, &InvalidError{Field: "overlap", Message: "want skip, allow or cancel_previous"}
	}
	if req.TimeZone == "" {
		req.TimeZone = "UTC"
	}
	cal, err := parseCalendar(req.Cron, req.TimeZone)
	if err != nil {
		return nil, err
	}
	s := &Schedule{
		ID: req.ID, Workflow: req.Workflow, Version: req.Version, Cron: req.Cron, TimeZone: req.TimeZone,
		Input: req.Input, Overlap: req.Overlap, Paused: req.Paused, Description: req.Description,
		CreatedAt: now, UpdatedAt: now, Rev: 1,
	}
	if !s.Paused {
		next := cal.next(now)
		if next.IsZero() {
			return nil, &InvalidError{Field: "cron", Message: "the expression never fires"}
		}
		s.NextAt = &next
		if _, err := e.putTimer(ctx, scheduleTimerName(s.ID), timerDue(next, now)); err != nil {
			return nil, unavailable(err)
		}
	}
	if _, err := e.store.Create(ctx, e.keys.Schedule(s.ID), mustJSON(s)); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) {
			return nil, &ConflictError{Message: fmt.Sprintf("schedule %s already exists", s.ID)}
		}
		return nil, unavailable(err)
	}
	return s, nil
}

// GetSchedule reads a schedule.
func (e *Engine) GetSchedule(ctx context.Context, id string) (*Schedule, error) {
	if err := scheduleIDRule.Check("schedule", id); err != nil {
		return nil, err
	}
	s, _, err := e.readSchedule(ctx, id)
	return s, err
}

// ListSchedules lists schedules by id: one LIST and one GET per schedule
// of the page.
func (e *Engine) ListSchedules(ctx context.Context, limit int, cursor string) (*SchedulePage, error) {
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	token, err := keys.DecodeCursor("cursor", cursor)
	if err != nil {
		return nil, err
	}
	p, err := e.store.List(ctx, blob.ListOptions{Prefix: e.keys.SchedulesPrefix(), PageSize: limit, PageToken: token})
	if err != nil {
		if e.cursorRefused(ctx, blob.ListOptions{Prefix: e.keys.SchedulesPrefix(), PageToken: token}, err) {
			return nil, &InvalidError{Field: "cursor", Message: "not a cursor of this listing"}
		}
		return nil, err
	}
	page := &SchedulePage{Schedules: []Schedule{}}
	for _, o := range p.Objects {
		s, _, err := readJSON[scheduleRecord](ctx, e.store, o.Key)
		if isNotFound(err) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		page.Schedules = append(page.Schedules, *s)
	}
	sort.Slice(page.Schedules, func(i, j int) bool { return page.Schedules[i].ID < page.Schedules[j].ID })
	if p.NextPageToken != "" {
		page.NextCursor = keys.EncodeCursor(p.NextPageToken)
	}
	return page, nil
}

// updateSchedule applies change to a schedule by compare-and-swap,
// re-reading on a lost race. change returns false to write nothing.
func (e *Engine) updateSchedule(ctx context.Context, id string, change func(s *Schedule, now time.Time) (bool, error)) (*Schedule, error) {
	if err := scheduleIDRule.Check("schedule", id); err != nil {
		return nil, err
	}
	for range maxScheduleSwapErrors {
		s, ver, err := e.readSchedule(ctx, id)
		if err != nil {
			return nil, err
		}
		now := e.now()
		write, err := change(s, now)
		if err != nil || !write {
			return s, err
		}
		s.Rev++
		s.UpdatedAt = now
		_, err = e.store.Swap(ctx, e.keys.Schedule(id), mustJSON(s), ver)
		if errors.Is(err, blob.ErrPreconditionFailed) || isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, unavailable(err)
		}
		return s, nil
	}
	return nil, unavailable(errors.New("schedule " + id + " kept changing"))
}

// PauseSchedule stops a schedule's ticks until it is resumed. A tick
// already claimed (pending) still starts its run.
func (e *Engine) PauseSchedule(ctx context.Context, id string) (*Schedule, error) {
	return e.updateSchedule(ctx, id, func(s *Schedule, _ time.Time) (bool, error) {
		if s.Paused {
			return false, nil
		}
		s.Paused, s.NextAt = true, nil
		return true, nil
	})
}

// ResumeSchedule resumes a paused schedule from now: the ticks that passed
// while it was paused do not fire (backfill them).
func (e *Engine) ResumeSchedule(ctx context.Context, id string) (*Schedule, error) {
	return e.updateSchedule(ctx, id, func(s *Schedule, now time.Time) (bool, error) {
		if !s.Paused {
			return false, nil
		}
		cal, err := scheduleCalendar(s)
		if err != nil {
			return false, err
		}
		next := cal.next(now)
		if next.IsZero() {
			return false, &ConflictError{Message: "the schedule's expression fires no more"}
		}
		if _, err := e.putTimer(ctx, scheduleTimerName(s.ID), timerDue(next, now)); err != nil {
			return false, unavailable(err)
		}
		s.Paused, s.NextAt = false, &next
		return true, nil
	})
}

// DeleteSchedule deletes a schedule. Its runs stay; its timer is dropped
// by the reaper when it comes due.
func (e *Engine) DeleteSchedule(ctx context.Context, id string) error {
	if _, err := e.GetSchedule(ctx, id); err != nil {
		return err
	}
	if err := e.store.Delete(ctx, e.keys.Schedule(id)); err != nil && !isNotFound(err) {
		return unavailable(err)
	}
	return nil
}

// BackfillSchedule starts the runs of the ticks in (from, to], oldest
// first, at most req.Max (≤ MaxBackfillTicks). Each tick's run has the
// tick's idempotency key, so a tick that fired, or was backfilled before,
// is not run twice. Backfill ignores the overlap policy and a pause.
func (e *Engine) BackfillSchedule(ctx context.Context, id string, req BackfillRequest) (*BackfillResult, error) {
	s, err := e.GetSchedule(ctx, id)
	if err != nil {
		return nil, err
	}
	now := e.now()
	switch {
	case req.From.IsZero():
		return nil, &InvalidError{Field: "from", Message: "required"}
	case req.To.IsZero():
		return nil, &InvalidError{Field: "to", Message: "required"}
	case req.To.After(now):
		return nil, &InvalidError{Field: "to", Message: "in the future: only past ticks are backfilled"}
	case !req.From.Before(req.To):
		return nil, &InvalidError{Field: "from", Message: "not before to"}
	}
	max := req.Max
	if max <= 0 || max > MaxBackfillTicks {
		max = MaxBackfillTicks
	}
	cal, err := scheduleCalendar(s)
	if err != nil {
		return nil, err
	}
	res := &BackfillResult{Ticks: []BackfillTick{}}
	for t := cal.next(req.From); !t.IsZero() && !t.After(req.To); t = cal.next(t) {
		if len(res.Ticks) == max {
			res.Truncated = true
			break
		}
		r, err := e.startTick(ctx, s, t)
		if err != nil {
			return nil, err
		}
		res.Ticks = append(res.Ticks, BackfillTick{Tick: t, Run: r.Run.ID, Existed: r.Existed})
	}
	return res, nil
}

func (e *Engine) startTick(ctx context.Context, s *Schedule, tick time.Time) (*cairn.StartResult, error) {
	return e.StartRun(ctx, StartRequest{
		Workflow: s.Workflow, Version: s.Version, Input: s.Input,
		Correlation:    "schedule:" + s.ID + ":" + tick.UTC().Format(time.RFC3339),
		IdempotencyKey: tickKey(s, tick),
	})
}

// reapSchedule visits a schedule whose timer is due: it finishes a pending
// tick, fires a due one, and keeps exactly one timer armed for the next.
// The due timer keys are deleted only once the visit succeeded.
func (e *Engine) reapSchedule(ctx context.Context, id string, timerKeys []string, now time.Time, stats *ReapStats) error {
	for range maxScheduleSwapErrors {
		s, ver, err := e.readSchedule(ctx, id)
		if isNotFoundErr(err) {
			return e.dropTimers(ctx, timerKeys, "") // deleted
		}
		if err != nil {
			return err
		}
		if s.Pending != nil {
			if err := e.finishTick(ctx, s, ver, stats); err != nil {
				if errors.Is(err, blob.ErrPreconditionFailed) || isNotFound(err) {
					continue // another reaper finished it
				}
				return err
			}
			continue
		}
		if s.Paused || s.NextAt == nil {
			return e.dropTimers(ctx, timerKeys, "")
		}
		if s.NextAt.After(now) {
			// Not due (a timer of an earlier state): keep one for NextAt.
			keep, err := e.putTimer(ctx, scheduleTimerName(id), timerDue(*s.NextAt, now))
			if err != nil {
				return err
			}
			return e.dropTimers(ctx, timerKeys, keep)
		}
		cal, err := scheduleCalendar(s)
		if err != nil {
			return err
		}
		tick, missed := cal.latest(*s.NextAt, now)
		next := cal.next(tick)
		if !next.IsZero() && !next.After(now) {
			next = cal.next(now) // more missed ticks than one visit walks
		}
		skip, err := e.overlapSkips(ctx, s)
		if err != nil {
			return err
		}
		// The next timer first: a crash after the claim must leave one.
		keep := ""
		if !next.IsZero() {
			if keep, err = e.putTimer(ctx, scheduleTimerName(id), timerDue(next, now)); err != nil {
				return err
			}
		}
		n := ticked(s, tick, next, missed, skip, now)
		nver, err := e.store.Swap(ctx, e.keys.Schedule(id), mustJSON(&n), ver)
		if errors.Is(err, blob.ErrPreconditionFailed) || isNotFound(err) {
			continue // another reaper claimed it: look again
		}
		if err != nil {
			return err
		}
		if skip {
			stats.SchedulesSkipped++
		} else if err := e.finishTick(ctx, &n, nver, stats); err != nil && !errors.Is(err, blob.ErrPreconditionFailed) && !isNotFound(err) {
			return err // the due timer stays: the next pass finishes the tick
		}
		return e.dropTimers(ctx, timerKeys, keep)
	}
	return errors.New("schedule " + id + " kept changing")
}

// overlapSkips reports whether a due tick of s is skipped: its overlap
// policy is skip and the run of its last tick is still running.
func (e *Engine) overlapSkips(ctx context.Context, s *scheduleRecord) (bool, error) {
	if s.Overlap != OverlapSkip || s.LastRun == "" {
		return false, nil
	}
	r, err := e.readRun(ctx, s.LastRun)
	switch {
	case err == nil:
		return !r.Status.Terminal(), nil
	case isNotFoundErr(err):
		return false, nil
	}
	return false, err
}

// ticked is s once tick is taken (pending, or skipped), missed ticks
// counted and next (zero: none) the next due time.
func ticked(s *scheduleRecord, tick, next time.Time, missed int64, skip bool, now time.Time) scheduleRecord {
	n := *s
	if next.IsZero() {
		n.NextAt = nil
	} else {
		n.NextAt = &next
	}
	n.Missed += missed
	if skip {
		n.Skipped++
	} else {
		n.Pending = &tick
	}
	n.Rev++
	n.UpdatedAt = now
	return n
}

// finishTick starts the pending tick's run and records it. A start the
// caller cannot fix by retrying (the workflow is not registered, the
// input no longer fits) is recorded as the schedule's last_error and the
// tick is dropped; any other error leaves the tick pending.
func (e *Engine) finishTick(ctx context.Context, s *Schedule, ver blob.Version, stats *ReapStats) error {
	tick := *s.Pending
	if s.Overlap == OverlapCancelPrevious && s.LastRun != "" {
		_, err := e.CancelRun(ctx, s.LastRun, "schedule "+s.ID+": tick "+tick.Format(time.RFC3339)+" replaces it (overlap cancel_previous)")
		var conflict *ConflictError
		if err != nil && !errors.As(err, &conflict) && !isNotFoundErr(err) {
			return err
		}
	}
	n := *s
	n.Pending = nil
	r, err := e.startTick(ctx, s, tick)
	var nf *NotFoundError
	var inv *InvalidError
	switch {
	case errors.As(err, &nf) || errors.As(err, &inv):
		n.Failed++
		n.LastError = "tick " + tick.Format(time.RFC3339) + ": " + err.Error()
	case err != nil:
		return err
	default:
		n.LastRun, n.LastTick, n.LastError = r.Run.ID, &tick, ""
		n.Fired++
	}
	n.Rev++
	n.UpdatedAt = e.now()
	if _, err := e.store.Swap(ctx, e.keys.Schedule(s.ID), mustJSON(&n), ver); err != nil {
		return err
	}
	if n.LastError == "" {
		stats.SchedulesFired++
	} else {
		stats.SchedulesFailed++
	}
	return nil
}
