package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/schedule"
	"github.com/cairn-dev/cairn/internal/testutil"
)

// schedClock starts at a fixed minute boundary plus 30s, so ticks of
// "* * * * *" fall 30s after each Advance(time.Minute).
func schedClock() *clock {
	return clockAt(time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC))
}

func mustCreateSchedule(t testing.TB, e *Engine, req cairn.ScheduleRequest) *cairn.Schedule {
	t.Helper()
	s, err := e.Schedules().Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustReap(t testing.TB, e *Engine) ReapStats {
	t.Helper()
	st, err := e.Reap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Errors != 0 {
		t.Fatalf("reaper pass had %d errors", st.Errors)
	}
	return st
}

// scheduleRuns returns the runs a schedule started, by tick (from the
// correlation schedule:<id>:<tick>), failing on a tick with two runs.
func scheduleRuns(t testing.TB, e *Engine, id string) map[string]*cairn.Run {
	t.Helper()
	runs := map[string]*cairn.Run{}
	page, err := e.ListRuns(context.Background(), ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Runs {
		full := getRun(t, e, r.ID)
		tick, ok := strings.CutPrefix(full.Correlation, "schedule:"+id+":")
		if !ok {
			continue
		}
		if prev, dup := runs[tick]; dup {
			t.Fatalf("tick %s started two runs: %s and %s", tick, prev.ID, r.ID)
		}
		runs[tick] = full
	}
	return runs
}

func TestScheduleValidation(t *testing.T) {
	e := newTestEngine(t, nil, Config{Now: schedClock().Now})
	register(t, e, "w", single("cronwf", cairn.Step{}))
	for _, c := range []struct {
		req   cairn.ScheduleRequest
		field string
	}{
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "not a cron"}, "cron"},
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "* * * * * *"}, "cron"},
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "@every 10s"}, "cron"},
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "CRON_TZ=Europe/Paris 0 2 * * *"}, "cron"},
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "0 0 30 2 *"}, "cron"}, // never fires
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "@daily", TimeZone: "Mars/Olympus"}, "time_zone"},
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "@daily", TimeZone: "Local"}, "time_zone"},
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "@daily", Overlap: "queue"}, "overlap"},
		{cairn.ScheduleRequest{Workflow: "cronwf", Cron: "@daily", Input: []byte(`{`)}, "input"},
		{cairn.ScheduleRequest{ID: "a/b", Workflow: "cronwf", Cron: "@daily"}, "id"},
		{cairn.ScheduleRequest{ID: "..", Workflow: "cronwf", Cron: "@daily"}, "id"},
		{cairn.ScheduleRequest{Workflow: "a b", Cron: "@daily"}, "workflow"},
	} {
		_, err := e.Schedules().Create(context.Background(), c.req)
		var inv *InvalidError
		var val cairn.ValidationError
		switch {
		case errors.As(err, &inv):
			if inv.Field != c.field {
				t.Errorf("%+v: error names %q, want %q", c.req, inv.Field, c.field)
			}
		case errors.As(err, &val):
			if val[0].Field != c.field {
				t.Errorf("%+v: error names %q, want %q", c.req, val[0].Field, c.field)
			}
		default:
			t.Errorf("%+v: got %v, want a validation error on %s", c.req, err, c.field)
		}
	}
	mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "dup", Workflow: "cronwf", Cron: "@hourly"})
	_, err := e.Schedules().Create(context.Background(), cairn.ScheduleRequest{ID: "dup", Workflow: "cronwf", Cron: "@hourly"})
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("second create of one id: got %v, want a conflict", err)
	}
}

// TestScheduleFiresOncePerTick races four reapers (four engines on one
// bucket, as four reaper invocations would be) over several ticks: each
// tick starts exactly one run.
func TestScheduleFiresOncePerTick(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, onStore(open(t)), withClock(schedClock))
			store, clk, engines := h.store, h.clk, h.instances(4)
			register(t, engines[0], "w", single("cronwf", cairn.Step{}))
			mustCreateSchedule(t, engines[0], cairn.ScheduleRequest{ID: "every-minute", Workflow: "cronwf", Cron: "* * * * *", Overlap: cairn.OverlapAllow, Input: []byte(`{"n":1}`)})
			const ticks = 3
			fired := 0
			for range ticks {
				clk.Advance(time.Minute)
				var wg sync.WaitGroup
				var mu sync.Mutex
				for _, e := range engines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						st, err := e.Reap(context.Background())
						if err != nil || st.Errors != 0 {
							t.Errorf("reap: %v, %d errors", err, st.Errors)
						}
						mu.Lock()
						fired += st.SchedulesFired
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			runs := scheduleRuns(t, engines[0], "every-minute")
			if len(runs) != ticks {
				t.Fatalf("%d runs for %d ticks: %v", len(runs), ticks, runs)
			}
			for i := 1; i <= ticks; i++ {
				tick := time.Date(2026, 3, 2, 10, i, 0, 0, time.UTC).Format(time.RFC3339)
				if r := runs[tick]; r == nil || string(r.Input) != `{"n":1}` {
					t.Errorf("tick %s: run %+v", tick, r)
				}
			}
			s, err := engines[1].Schedules().Get(context.Background(), "every-minute")
			if err != nil {
				t.Fatal(err)
			}
			if s.Fired != ticks || fired != ticks || s.Pending != nil || s.Missed != 0 {
				t.Fatalf("schedule fired=%d (reapers counted %d) pending=%v missed=%d, want %d", s.Fired, fired, s.Pending, s.Missed, ticks)
			}
			if want := time.Date(2026, 3, 2, 10, ticks+1, 0, 0, time.UTC); s.NextAt == nil || !s.NextAt.Equal(want) {
				t.Fatalf("next_at %v, want %v", s.NextAt, want)
			}
			// Exactly one live timer: the next tick's.
			all, err := store.ListAll(context.Background(), engines[0].keys.TimersPrefix())
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, a := range all {
				if _, name, _ := engines[0].keys.ParseTimer(a.Key); strings.HasPrefix(name, schedule.TimerPrefix) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d schedule timers left, want 1: %v", n, all)
			}
		})
	}
}

func TestScheduleOverlap(t *testing.T) {
	for _, policy := range []string{cairn.OverlapSkip, cairn.OverlapAllow, cairn.OverlapCancelPrevious} {
		t.Run(policy, func(t *testing.T) {
			h := newHarness(t, withClock(schedClock))
			clk, e := h.clk, h.e
			// A task step no worker claims: each run keeps running.
			register(t, e, "w", single("cronwf", cairn.Step{}))
			mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "s", Workflow: "cronwf", Cron: "* * * * *", Overlap: policy})
			clk.Advance(time.Minute)
			mustReap(t, e)
			clk.Advance(time.Minute)
			st := mustReap(t, e)
			runs := scheduleRuns(t, e, "s")
			first := runs["2026-03-02T10:01:00Z"]
			second := runs["2026-03-02T10:02:00Z"]
			if first == nil {
				t.Fatalf("the first tick started no run: %v", runs)
			}
			s, _ := e.Schedules().Get(context.Background(), "s")
			switch policy {
			case cairn.OverlapSkip:
				if second != nil || s.Skipped != 1 || st.SchedulesSkipped != 1 || s.LastRun != first.ID {
					t.Fatalf("skip: second=%v skipped=%d last=%s", second, s.Skipped, s.LastRun)
				}
				if first.Status != cairn.RunRunning {
					t.Fatalf("first run %s", first.Status)
				}
				// Once the first run ends, the next tick fires.
				if _, err := e.CancelRun(context.Background(), first.ID, "done"); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Minute)
				mustReap(t, e)
				if scheduleRuns(t, e, "s")["2026-03-02T10:03:00Z"] == nil {
					t.Fatal("the tick after the overlap ended started no run")
				}
			case cairn.OverlapAllow:
				if second == nil || first.Status != cairn.RunRunning || second.Status != cairn.RunRunning {
					t.Fatalf("allow: first %v second %v", first, second)
				}
			case cairn.OverlapCancelPrevious:
				if second == nil || first.Status != cairn.RunCancelled || second.Status != cairn.RunRunning {
					t.Fatalf("cancel_previous: first %s second %v", first.Status, second)
				}
			}
		})
	}
}

func TestSchedulePauseResume(t *testing.T) {
	h := newHarness(t, withClock(schedClock), withWorkflows("w", single("cronwf", cairn.Step{Kind: cairn.KindSleep, Duration: cairn.Duration(time.Hour)})))
	ctx, clk, e := h.ctx, h.clk, h.e
	mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "p", Workflow: "cronwf", Cron: "*/5 * * * *", Overlap: cairn.OverlapAllow})
	s, err := e.Schedules().Pause(ctx, "p")
	if err != nil || !s.Paused || s.NextAt != nil {
		t.Fatalf("pause: %+v %v", s, err)
	}
	if again, err := e.Schedules().Pause(ctx, "p"); err != nil || again.Rev != s.Rev {
		t.Fatalf("pausing a paused schedule wrote: %+v %v", again, err)
	}
	clk.Advance(20 * time.Minute)
	mustReap(t, e)
	if runs := scheduleRuns(t, e, "p"); len(runs) != 0 {
		t.Fatalf("a paused schedule started %d runs", len(runs))
	}
	s, err = e.Schedules().Resume(ctx, "p")
	if want := time.Date(2026, 3, 2, 10, 25, 0, 0, time.UTC); err != nil || s.Paused || s.NextAt == nil || !s.NextAt.Equal(want) {
		t.Fatalf("resume: %+v %v, want next_at %v", s, err, want)
	}
	clk.Advance(5 * time.Minute)
	mustReap(t, e)
	runs := scheduleRuns(t, e, "p")
	if len(runs) != 1 || runs["2026-03-02T10:25:00Z"] == nil {
		t.Fatalf("after resume: %v", runs)
	}
	if err := e.Schedules().Delete(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Minute)
	mustReap(t, e)
	if runs := scheduleRuns(t, e, "p"); len(runs) != 1 {
		t.Fatalf("a deleted schedule fired: %v", runs)
	}
	if left, _ := e.store.ListAll(ctx, e.keys.TimersPrefix()); len(left) != 1 { // the sleeping run's
		t.Fatalf("timers left after delete: %v", left)
	}
	if _, err := e.Schedules().Get(ctx, "p"); !isNotFoundAPI(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

// TestScheduleMissedAndBackfill: a reaper that did not run for ten ticks
// fires only the newest; backfill starts the others, once.
func TestScheduleMissedAndBackfill(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, clk, e := h.ctx, h.clk, h.e
		created := mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "b", Workflow: "cronwf", Cron: "* * * * *", Overlap: cairn.OverlapAllow})
		clk.Advance(10 * time.Minute)
		mustReap(t, e)
		s, _ := e.Schedules().Get(ctx, "b")
		if s.Fired != 1 || s.Missed != 9 || s.LastTick == nil || !s.LastTick.Equal(time.Date(2026, 3, 2, 10, 10, 0, 0, time.UTC)) {
			t.Fatalf("after a gap: fired=%d missed=%d last=%v", s.Fired, s.Missed, s.LastTick)
		}
		res, err := e.Schedules().Backfill(ctx, "b", cairn.BackfillRequest{From: created.CreatedAt, To: clk.Now(), Max: 4})
		if err != nil || len(res.Ticks) != 4 || !res.Truncated {
			t.Fatalf("bounded backfill: %+v %v", res, err)
		}
		res, err = e.Schedules().Backfill(ctx, "b", cairn.BackfillRequest{From: created.CreatedAt, To: clk.Now()})
		if err != nil || len(res.Ticks) != 10 || res.Truncated {
			t.Fatalf("backfill: %+v %v", res, err)
		}
		for i, tk := range res.Ticks {
			if want := i < 4 || i == 9; tk.Existed != want {
				t.Errorf("tick %s existed=%v, want %v", tk.Tick, tk.Existed, want)
			}
		}
		if runs := scheduleRuns(t, e, "b"); len(runs) != 10 {
			t.Fatalf("%d runs after backfill, want 10", len(runs))
		}
		for _, bad := range []cairn.BackfillRequest{
			{From: created.CreatedAt},
			{To: clk.Now()},
			{From: clk.Now(), To: created.CreatedAt},
			{From: created.CreatedAt, To: clk.Now().Add(time.Hour)},
		} {
			var inv *InvalidError
			if _, err := e.Schedules().Backfill(ctx, "b", bad); !errors.As(err, &inv) {
				t.Errorf("backfill %+v: %v, want invalid", bad, err)
			}
		}
	}, withClock(schedClock), withWorkflows("w", single("cronwf", cairn.Step{})))
}

// TestSchedulePendingTickFinished: a reaper that died after claiming a
// tick (pending set, no run) leaves it to the next pass, which starts
// the run once.
func TestSchedulePendingTickFinished(t *testing.T) {
	h := newHarness(t, withClock(schedClock), withWorkflows("w", single("cronwf", cairn.Step{})))
	ctx, clk, e := h.ctx, h.clk, h.e
	mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "c", Workflow: "cronwf", Cron: "* * * * *"})
	s, ver, err := e.schedules.Read(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	tick := *s.NextAt
	next := tick.Add(time.Minute)
	s.Pending, s.NextAt = &tick, &next
	if _, err := e.store.Swap(ctx, e.keys.Schedule("c"), object.JSON(s), ver); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	st := mustReap(t, e)
	if st.SchedulesFired != 1 {
		t.Fatalf("stats %+v", st)
	}
	s, _, _ = e.schedules.Read(ctx, "c")
	if s.Pending != nil || s.Fired != 1 || s.LastRun == "" || !s.NextAt.Equal(next) {
		t.Fatalf("after finishing: %+v", s)
	}
}

// TestScheduleOfUnregisteredWorkflowRefused: a schedule of a workflow (or
// a pinned version) with no registered definition is refused at creation,
// naming the field, rather than failing every tick.
func TestScheduleOfUnregisteredWorkflowRefused(t *testing.T) {
	h := newHarness(t, withClock(schedClock), withWorkflows("w", single("known", cairn.Step{})))
	for _, c := range []struct {
		req   cairn.ScheduleRequest
		field string
	}{
		{cairn.ScheduleRequest{Workflow: "nobody", Cron: "* * * * *"}, "workflow"},
		{cairn.ScheduleRequest{Workflow: "nobody", Version: "1", Cron: "* * * * *"}, "workflow"},
		{cairn.ScheduleRequest{Workflow: "known", Version: "2", Cron: "* * * * *"}, "version"},
	} {
		_, err := h.e.Schedules().Create(h.ctx, c.req)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != c.field || !strings.Contains(inv.Message, c.req.Workflow) {
			t.Errorf("%+v: got %v, want an invalid %s", c.req, err, c.field)
		}
	}
	if p, err := h.e.Schedules().List(h.ctx, 0, ""); err != nil || len(p.Schedules) != 0 {
		t.Fatalf("schedules %+v, %v", p, err)
	}
	mustCreateSchedule(t, h.e, cairn.ScheduleRequest{Workflow: "known", Cron: "* * * * *"})
	mustCreateSchedule(t, h.e, cairn.ScheduleRequest{Workflow: "known", Version: "1", Cron: "* * * * *"})
}

// TestScheduleUnregisteredWorkflow: a tick whose workflow is not
// registered (a schedule stored before creation checked it) is counted
// failed, recorded as last_error and logged at warn with the schedule's
// id, and the next tick tries again.
func TestScheduleUnregisteredWorkflow(t *testing.T) {
	var logs testutil.SyncBuffer
	h := newHarness(t, withClock(schedClock), withWorkflows("w", single("other", cairn.Step{})),
		withConfig(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	ctx, clk, e := h.ctx, h.clk, h.e
	mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "u", Workflow: "other", Cron: "* * * * *"})
	s, ver, err := e.schedules.Read(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	s.Workflow = "nobody"
	if _, err := e.store.Swap(ctx, e.keys.Schedule("u"), object.JSON(s), ver); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	st := mustReap(t, e)
	s, _ = e.Schedules().Get(ctx, "u")
	if st.SchedulesFailed != 1 || s.Failed != 1 || s.Pending != nil || !strings.Contains(s.LastError, "nobody") || s.NextAt == nil {
		t.Fatalf("stats %+v schedule %+v", st, s)
	}
	var warned []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "schedule tick failed") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") || !strings.Contains(warned[0], "schedule=u") || !strings.Contains(warned[0], "nobody") {
		t.Fatalf("want one warning naming the schedule and the error, got %q\n%s", warned, logs.String())
	}
	// The next tick tries again, and works once the workflow exists.
	register(t, e, "w", single("nobody", cairn.Step{}))
	clk.Advance(time.Minute)
	mustReap(t, e)
	if s, _ = e.Schedules().Get(ctx, "u"); s.Fired != 1 || s.LastError != "" {
		t.Fatalf("after registering: %+v", s)
	}
}

// TestScheduleInputTooLargeFails: a tick whose input no longer fits (the
// payload limit was lowered after the schedule was made) is recorded as a
// failure with the limit named, not left pending for every reaper pass.
func TestScheduleInputTooLargeFails(t *testing.T) {
	h := newHarness(t, withClock(schedClock), withWorkflows("w", single("big", cairn.Step{})))
	ctx, clk := h.ctx, h.clk
	input := json.RawMessage(`"` + strings.Repeat("x", 4<<10) + `"`)
	mustCreateSchedule(t, h.e, cairn.ScheduleRequest{ID: "b", Workflow: "big", Cron: "* * * * *", Input: input})
	small, err := New(h.store, Config{MaxOutputBytes: 2 << 10, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	clk.Advance(time.Minute)
	st := mustReap(t, small)
	s, _ := small.Schedules().Get(ctx, "b")
	if st.SchedulesFailed != 1 || s.Failed != 1 || s.Pending != nil || !strings.Contains(s.LastError, "limit") {
		t.Fatalf("stats %+v schedule %+v", st, s)
	}
}

// TestScheduleTimeZones: ticks follow the wall clock of the schedule's
// zone across daylight-saving changes. robfig/cron skips a tick in the
// hour that does not exist and fires once in the hour that repeats.
func TestScheduleTimeZones(t *testing.T) {
	cal, err := schedule.ParseCalendar("30 2 * * *", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for t0 := time.Date(2026, 3, 6, 12, 0, 0, 0, time.UTC); len(got) < 4; {
		t0 = cal.Next(t0)
		got = append(got, t0.Format(time.RFC3339))
	}
	// 2026-03-08 02:30 EST→EDT does not exist.
	want := []string{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z", "2026-03-11T06:30:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("spring forward: got %v, want %v", got, want)
	}
	cal, err = schedule.ParseCalendar("30 1 * * *", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for t0 := time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC); len(got) < 3; {
		t0 = cal.Next(t0)
		got = append(got, t0.Format(time.RFC3339))
	}
	// 2026-11-01 01:30 happens twice (EDT then EST): one tick.
	want = []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fall back: got %v, want %v", got, want)
	}
	// Through the engine: a daily schedule in Asia/Kolkata (UTC+5:30).
	clk := clockAt(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	e := newTestEngine(t, nil, Config{Now: clk.Now})
	register(t, e, "w", single("x", cairn.Step{}))
	s := mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "tz", Workflow: "x", Cron: "0 9 * * *", TimeZone: "Asia/Kolkata"})
	if want := time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC); !s.NextAt.Equal(want) {
		t.Fatalf("next_at %v, want %v", s.NextAt, want)
	}
}

// TestScheduleReaperRequests measures what schedules add to a reaper pass:
// nothing while none is due (their timers sit in the index the pass
// lists anyway), and a fixed handful per tick.
func TestScheduleReaperRequests(t *testing.T) {
	h := newHarness(t, withClock(schedClock), counted(), withWorkflows("w", single("cronwf", cairn.Step{})))
	ctx, clk, e, counts := h.ctx, h.clk, h.e, h.counts
	for i := range 50 {
		mustCreateSchedule(t, e, cairn.ScheduleRequest{ID: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Workflow: "cronwf", Cron: "0 * * * *"})
	}
	counts.Reset()
	mustReap(t, e)
	idle := counts.Snapshot()
	if idle.Total() != 1 || idle.List != 1 {
		t.Fatalf("a pass with 50 schedules none due: %+v, want the one LIST of timers", idle)
	}
	clk.Advance(time.Hour)
	counts.Reset()
	st := mustReap(t, e)
	tick := counts.Snapshot()
	if st.SchedulesFired != 50 {
		t.Fatalf("fired %d", st.SchedulesFired)
	}
	per := float64(tick.Total()-1) / 50
	t.Logf("requests per tick (overlap skip, first run): %.1f (%+v over 50 ticks)", per, tick)
	if per > 12 {
		t.Fatalf("%.1f requests per tick", per)
	}
	_ = ctx
}
