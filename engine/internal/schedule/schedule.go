// Package schedule keeps the engine's schedules: runs of a workflow
// started on a cron calendar. A schedule is one object, schedules/<id>,
// changed only by compare-and-swap; the reaper learns when one is due
// from the timer index it already lists (timers/<due>/s-<id>), so a pass
// with no schedule due costs no request more than before. Firing a tick
// is two CASes around an idempotent start:
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
//
// The engine's public methods (CreateSchedule, ..., engine/schedules.go)
// forward here; what schedules need of the engine is its Host.
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones on images without /usr/share/zoneinfo

	"github.com/robfig/cron/v3"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// Bounds of schedules.
const (
	// IDPattern: schedule ids are part of keys (schedules/<id>).
	IDPattern        = `^[A-Za-z0-9][A-Za-z0-9_.-]*$`
	MaxIDLength      = 128
	MaxBackfillTicks = 100
	MinInterval      = time.Minute
	maxTickSteps     = 100_000 // catch-up iterations of the calendar in one visit
	// TimerPrefix starts the timer names of schedules (run ids are
	// ULIDs: no "-", no collision).
	TimerPrefix   = "s-"
	maxSwapErrors = 4
)

var idRule = keys.NewRule(IDPattern, MaxIDLength)

// cronParser reads the five standard fields and descriptors (@daily,
// @every 1h). Time zones come from the time_zone field, never from the
// expression (CRON_TZ= is refused).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Host is what schedules use of the engine.
type Host struct {
	Store *blob.Bucket
	Keys  keys.Layout
	Now   func() time.Time
	// NewID returns a new run id (a schedule created without an id gets
	// one, lower-cased).
	NewID func(now time.Time) string
	// CheckStart refuses a start that cannot start (no such workflow, a
	// bad input), as starting would.
	CheckStart func(workflow, version string, input json.RawMessage) error
	// Latest returns a workflow's newest registered version, and Defined
	// reads a registered version's definition: a NotFoundError when there
	// is none.
	Latest  func(ctx context.Context, workflow string) (string, error)
	Defined func(ctx context.Context, workflow, version string) error
	// Start starts a run, once per idempotency key.
	Start func(ctx context.Context, workflow, version string, input json.RawMessage, correlation, idempotencyKey string) (*cairn.StartResult, error)
	// Cancel cancels a run (a ConflictError when it has ended).
	Cancel func(ctx context.Context, run, reason string) (*cairn.Run, error)
	// Run reads a run's workflow and status (a NotFoundError when it is
	// gone).
	Run func(ctx context.Context, run string) (workflow string, status cairn.RunStatus, err error)
	// TimerDue is when a timer for due is written; PutTimer writes the
	// timer named name at a due time TimerDue returned, and returns its
	// key; DropTimers deletes timer keys but keep.
	TimerDue   func(due, now time.Time) time.Time
	PutTimer   func(ctx context.Context, name string, due time.Time) (string, error)
	DropTimers func(ctx context.Context, timerKeys []string, keep string) error
	// CursorRefused tells whether a listing failed for its page token
	// rather than the store.
	CursorRefused func(ctx context.Context, opts blob.ListOptions, err error) bool
	// Log receives a warning for each tick whose run could not be started
	// [none].
	Log *slog.Logger
}

// Schedules is the schedules of one engine.
type Schedules struct{ h Host }

// New returns the schedules kept through h.
func New(h Host) *Schedules { return &Schedules{h: h} }

// Tally counts what reaper visits did with due ticks.
type Tally struct{ Fired, Skipped, Failed int }

// record is what schedules/<id> holds: the view itself.
type record = cairn.Schedule

func timerName(id string) string { return TimerPrefix + id }

// TimerID is the schedule a timer name belongs to, if any.
func TimerID(name string) (string, bool) { return strings.CutPrefix(name, TimerPrefix) }

// Calendar is a parsed cron expression in its time zone.
type Calendar struct {
	s   cron.Schedule
	loc *time.Location
}

// ParseCalendar reads a cron expression in the time zone tz ("": UTC).
func ParseCalendar(expr, tz string) (Calendar, error) {
	if strings.Contains(expr, "TZ=") {
		return Calendar{}, &errs.InvalidError{Field: "cron", Message: "name the time zone in time_zone, not in the expression"}
	}
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return Calendar{}, &errs.InvalidError{Field: "time_zone", Message: fmt.Sprintf("%q is not an IANA time zone", tz)}
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return Calendar{}, &errs.InvalidError{Field: "cron", Message: err.Error()}
	}
	switch cs := s.(type) {
	case *cron.SpecSchedule:
		cs.Location = loc
	case cron.ConstantDelaySchedule:
		if cs.Delay < MinInterval {
			return Calendar{}, &errs.InvalidError{Field: "cron", Message: fmt.Sprintf("@every %v is shorter than %v", cs.Delay, MinInterval)}
		}
	}
	return Calendar{s: s, loc: loc}, nil
}

// Next is the first tick after t (zero when the calendar has none). As
// in Vixie cron, a cron expression never fires twice for one wall-clock
// time: when clocks go back, ticks whose local time already passed are
// skipped (a daily 01:30 fires once on the night the hour repeats).
func (c Calendar) Next(t time.Time) time.Time {
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
func (c Calendar) latest(next, now time.Time) (time.Time, int64) {
	tick, missed := next, int64(0)
	for range maxTickSteps {
		n := c.Next(tick)
		if n.IsZero() || n.After(now) {
			break
		}
		tick, missed = n, missed+1
	}
	return tick, missed
}

func calendarOf(s *record) (Calendar, error) { return ParseCalendar(s.Cron, s.TimeZone) }

// tickKey names a tick's run. The creation time keeps a schedule
// deleted and created again under its id from meeting the old runs.
func tickKey(s *record, tick time.Time) string {
	return "schedule/" + s.ID + "/" + strconv.FormatInt(s.CreatedAt.UnixNano(), 10) + "/" + tick.UTC().Format(time.RFC3339)
}

func isNotFound(err error) bool { return errors.Is(err, blob.ErrNotFound) }

// Read reads a schedule's record and its version.
func (x *Schedules) Read(ctx context.Context, id string) (*cairn.Schedule, blob.Version, error) {
	s, v, err := object.Read[record](ctx, x.h.Store, x.h.Keys.Schedule(id))
	if isNotFound(err) {
		return nil, "", &errs.NotFoundError{What: "schedule", ID: id}
	}
	return s, v, err
}

// Create stores a new schedule and arms its first tick.
func (x *Schedules) Create(ctx context.Context, req cairn.ScheduleRequest) (*cairn.Schedule, error) {
	h := x.h
	now := h.Now()
	if req.ID == "" {
		req.ID = strings.ToLower(h.NewID(now))
	}
	if err := idRule.Check("id", req.ID); err != nil {
		return nil, err
	}
	if err := h.CheckStart(req.Workflow, req.Version, req.Input); err != nil {
		return nil, err
	}
	if err := h.checkRegistered(ctx, req.Workflow, req.Version); err != nil {
		return nil, err
	}
	switch req.Overlap {
	case "":
		req.Overlap = cairn.OverlapSkip
	case cairn.OverlapSkip, cairn.OverlapAllow, cairn.OverlapCancelPrevious:
	default:
		return nil, &errs.InvalidError{Field: "overlap", Message: "want skip, allow or cancel_previous"}
	}
	if req.TimeZone == "" {
		req.TimeZone = "UTC"
	}
	cal, err := ParseCalendar(req.Cron, req.TimeZone)
	if err != nil {
		return nil, err
	}
	s := &cairn.Schedule{
		ID: req.ID, Workflow: req.Workflow, Version: req.Version, Cron: req.Cron, TimeZone: req.TimeZone,
		Input: req.Input, Overlap: req.Overlap, Paused: req.Paused, Description: req.Description,
		CreatedAt: now, UpdatedAt: now, Rev: 1,
	}
	if !s.Paused {
		next := cal.Next(now)
		if next.IsZero() {
			return nil, &errs.InvalidError{Field: "cron", Message: "the expression never fires"}
		}
		s.NextAt = &next
		if _, err := h.PutTimer(ctx, timerName(s.ID), h.TimerDue(next, now)); err != nil {
			return nil, errs.Unavailable(err)
		}
	}
	if _, err := h.Store.Create(ctx, h.Keys.Schedule(s.ID), object.JSON(s)); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) {
			return nil, &errs.ConflictError{Message: fmt.Sprintf("schedule %s already exists", s.ID)}
		}
		return nil, errs.Unavailable(err)
	}
	return s, nil
}

// Get reads a schedule.
func (x *Schedules) Get(ctx context.Context, id string) (*cairn.Schedule, error) {
	if err := idRule.Check("schedule", id); err != nil {
		return nil, err
	}
	s, _, err := x.Read(ctx, id)
	return s, err
}

// List lists schedules by id: one LIST and one GET per schedule of the
// page.
func (x *Schedules) List(ctx context.Context, limit int, cursor string) (*cairn.SchedulePage, error) {
	h := x.h
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	token, err := keys.DecodeCursor("cursor", cursor)
	if err != nil {
		return nil, err
	}
	p, err := h.Store.List(ctx, blob.ListOptions{Prefix: h.Keys.SchedulesPrefix(), PageSize: limit, PageToken: token})
	if err != nil {
		if h.CursorRefused(ctx, blob.ListOptions{Prefix: h.Keys.SchedulesPrefix(), PageToken: token}, err) {
			return nil, &errs.InvalidError{Field: "cursor", Message: "not a cursor of this listing"}
		}
		return nil, err
	}
	page := &cairn.SchedulePage{Schedules: []cairn.Schedule{}}
	for _, o := range p.Objects {
		s, _, err := object.Read[record](ctx, h.Store, o.Key)
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

// update applies change to a schedule by compare-and-swap, re-reading on
// a lost race. change returns false to write nothing.
func (x *Schedules) update(ctx context.Context, id string, change func(s *cairn.Schedule, now time.Time) (bool, error)) (*cairn.Schedule, error) {
	if err := idRule.Check("schedule", id); err != nil {
		return nil, err
	}
	for range maxSwapErrors {
		s, ver, err := x.Read(ctx, id)
		if err != nil {
			return nil, err
		}
		now := x.h.Now()
		write, err := change(s, now)
		if err != nil || !write {
			return s, err
		}
		s.Rev++
		s.UpdatedAt = now
		_, err = x.h.Store.Swap(ctx, x.h.Keys.Schedule(id), object.JSON(s), ver)
		if errors.Is(err, blob.ErrPreconditionFailed) || isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, errs.Unavailable(err)
		}
		return s, nil
	}
	return nil, errs.Unavailable(errors.New("schedule " + id + " kept changing"))
}

// Pause stops a schedule's ticks until it is resumed. A tick already
// claimed (pending) still starts its run.
func (x *Schedules) Pause(ctx context.Context, id string) (*cairn.Schedule, error) {
	return x.update(ctx, id, func(s *cairn.Schedule, _ time.Time) (bool, error) {
		if s.Paused {
			return false, nil
		}
		s.Paused, s.NextAt = true, nil
		return true, nil
	})
}

// Resume resumes a paused schedule from now: the ticks that passed while
// it was paused do not fire (backfill them).
func (x *Schedules) Resume(ctx context.Context, id string) (*cairn.Schedule, error) {
	return x.update(ctx, id, func(s *cairn.Schedule, now time.Time) (bool, error) {
		if !s.Paused {
			return false, nil
		}
		cal, err := calendarOf(s)
		if err != nil {
			return false, err
		}
		next := cal.Next(now)
		if next.IsZero() {
			return false, &errs.ConflictError{Message: "the schedule's expression fires no more"}
		}
		if _, err := x.h.PutTimer(ctx, timerName(s.ID), x.h.TimerDue(next, now)); err != nil {
			return false, errs.Unavailable(err)
		}
		s.Paused, s.NextAt = false, &next
		return true, nil
	})
}

// Delete deletes a schedule. Its runs stay; its timer is dropped by the
// reaper when it comes due.
func (x *Schedules) Delete(ctx context.Context, id string) error {
	if _, err := x.Get(ctx, id); err != nil {
		return err
	}
	if err := x.h.Store.Delete(ctx, x.h.Keys.Schedule(id)); err != nil && !isNotFound(err) {
		return errs.Unavailable(err)
	}
	return nil
}

// Backfill starts the runs of the ticks in (from, to], oldest first, at
// most req.Max (≤ MaxBackfillTicks). Each tick's run has the tick's
// idempotency key, so a tick that fired, or was backfilled before, is not
// run twice. Backfill ignores the overlap policy and a pause.
func (x *Schedules) Backfill(ctx context.Context, id string, req cairn.BackfillRequest) (*cairn.BackfillResult, error) {
	s, err := x.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	now := x.h.Now()
	switch {
	case req.From.IsZero():
		return nil, &errs.InvalidError{Field: "from", Message: "required"}
	case req.To.IsZero():
		return nil, &errs.InvalidError{Field: "to", Message: "required"}
	case req.To.After(now):
		return nil, &errs.InvalidError{Field: "to", Message: "in the future: only past ticks are backfilled"}
	case !req.From.Before(req.To):
		return nil, &errs.InvalidError{Field: "from", Message: "not before to"}
	}
	max := req.Max
	if max <= 0 || max > MaxBackfillTicks {
		max = MaxBackfillTicks
	}
	cal, err := calendarOf(s)
	if err != nil {
		return nil, err
	}
	res := &cairn.BackfillResult{Ticks: []cairn.BackfillTick{}}
	for t := cal.Next(req.From); !t.IsZero() && !t.After(req.To); t = cal.Next(t) {
		if len(res.Ticks) == max {
			res.Truncated = true
			break
		}
		r, err := x.startTick(ctx, s, t)
		if err != nil {
			return nil, err
		}
		res.Ticks = append(res.Ticks, cairn.BackfillTick{Tick: t, Run: r.Run.ID, Existed: r.Existed})
	}
	return res, nil
}

func (x *Schedules) startTick(ctx context.Context, s *cairn.Schedule, tick time.Time) (*cairn.StartResult, error) {
	return x.h.Start(ctx, s.Workflow, s.Version, s.Input, "schedule:"+s.ID+":"+tick.UTC().Format(time.RFC3339), tickKey(s, tick))
}

// Reap visits a schedule whose timer is due: it finishes a pending tick,
// fires a due one, and keeps exactly one timer armed for the next. The
// due timer keys are deleted only once the visit succeeded. The tally
// counts the ticks it took, error or not.
func (x *Schedules) Reap(ctx context.Context, id string, timerKeys []string, now time.Time) (Tally, error) {
	var t Tally
	return t, x.reap(ctx, id, timerKeys, now, &t)
}

func (x *Schedules) reap(ctx context.Context, id string, timerKeys []string, now time.Time, stats *Tally) error {
	h := x.h
	for range maxSwapErrors {
		s, ver, err := x.Read(ctx, id)
		if errs.IsNotFound(err) {
			return h.DropTimers(ctx, timerKeys, "") // deleted
		}
		if err != nil {
			return err
		}
		if s.Pending != nil {
			if err := x.finishTick(ctx, s, ver, stats); err != nil {
				if errors.Is(err, blob.ErrPreconditionFailed) || isNotFound(err) {
					continue // another reaper finished it
				}
				return err
			}
			continue
		}
		if s.Paused || s.NextAt == nil {
			return h.DropTimers(ctx, timerKeys, "")
		}
		if s.NextAt.After(now) {
			// Not due (a timer of an earlier state): keep one for NextAt.
			keep, err := h.PutTimer(ctx, timerName(id), h.TimerDue(*s.NextAt, now))
			if err != nil {
				return err
			}
			return h.DropTimers(ctx, timerKeys, keep)
		}
		cal, err := calendarOf(s)
		if err != nil {
			return err
		}
		tick, missed := cal.latest(*s.NextAt, now)
		next := cal.Next(tick)
		if !next.IsZero() && !next.After(now) {
			next = cal.Next(now) // more missed ticks than one visit walks
		}
		skip, err := x.overlapSkips(ctx, s)
		if err != nil {
			return err
		}
		// The next timer first: a crash after the claim must leave one.
		keep := ""
		if !next.IsZero() {
			if keep, err = h.PutTimer(ctx, timerName(id), h.TimerDue(next, now)); err != nil {
				return err
			}
		}
		n := ticked(s, tick, next, missed, skip, now)
		nver, err := h.Store.Swap(ctx, h.Keys.Schedule(id), object.JSON(&n), ver)
		if errors.Is(err, blob.ErrPreconditionFailed) || isNotFound(err) {
			continue // another reaper claimed it: look again
		}
		if err != nil {
			return err
		}
		if skip {
			stats.Skipped++
		} else if err := x.finishTick(ctx, &n, nver, stats); err != nil && !errors.Is(err, blob.ErrPreconditionFailed) && !isNotFound(err) {
			return err // the due timer stays: the next pass finishes the tick
		}
		return h.DropTimers(ctx, timerKeys, keep)
	}
	return errors.New("schedule " + id + " kept changing")
}

// overlapSkips reports whether a due tick of s is skipped: its overlap
// policy is skip and the run of its last tick is still running.
func (x *Schedules) overlapSkips(ctx context.Context, s *record) (bool, error) {
	if s.Overlap != cairn.OverlapSkip || s.LastRun == "" {
		return false, nil
	}
	_, status, err := x.h.Run(ctx, s.LastRun)
	switch {
	case err == nil:
		return !status.Terminal(), nil
	case errs.IsNotFound(err):
		return false, nil
	}
	return false, err
}

// ticked is s once tick is taken (pending, or skipped), missed ticks
// counted and next (zero: none) the next due time.
func ticked(s *record, tick, next time.Time, missed int64, skip bool, now time.Time) record {
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
func (x *Schedules) finishTick(ctx context.Context, s *cairn.Schedule, ver blob.Version, stats *Tally) error {
	tick := *s.Pending
	if s.Overlap == cairn.OverlapCancelPrevious && s.LastRun != "" {
		_, err := x.h.Cancel(ctx, s.LastRun, "schedule "+s.ID+": tick "+tick.Format(time.RFC3339)+" replaces it (overlap cancel_previous)")
		var conflict *errs.ConflictError
		if err != nil && !errors.As(err, &conflict) && !errs.IsNotFound(err) {
			return err
		}
	}
	n := *s
	n.Pending = nil
	r, err := x.startTick(ctx, s, tick)
	var nf *errs.NotFoundError
	var inv *errs.InvalidError
	var bad cairn.ValidationError // the input over a payload limit
	switch {
	case errors.As(err, &nf) || errors.As(err, &inv) || errors.As(err, &bad):
		n.Failed++
		n.LastError = "tick " + tick.Format(time.RFC3339) + ": " + err.Error()
	case err != nil:
		return err
	default:
		n.LastRun, n.LastTick, n.LastError = r.Run.ID, &tick, ""
		n.Fired++
	}
	n.Rev++
	n.UpdatedAt = x.h.Now()
	if _, err := x.h.Store.Swap(ctx, x.h.Keys.Schedule(s.ID), object.JSON(&n), ver); err != nil {
		return err
	}
	if n.LastError == "" {
		stats.Fired++
	} else {
		stats.Failed++
		// Once per failed tick: logged after the swap that records it,
		// which one reaper wins.
		if x.h.Log != nil {
			x.h.Log.Warn("schedule tick failed", "schedule", s.ID, "workflow", s.Workflow, "tick", tick.Format(time.RFC3339), "err", err)
		}
	}
	return nil
}
