package sdk

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestSchedulesOverHTTP drives every schedule operation and run deletion
// through the SDK against a real server.
func TestSchedulesOverHTTP(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, sdktest.Options{})
	reg, err := e.c.API().RegisterWorkerWithBodyWithResponse(ctx, "application/json",
		strings.NewReader(`{"worker_id":"w","workflows":[{"name":"nightly","version":"1","steps":[{"id":"only"}]}]}`))
	if err := e.c.check(err, reg); err != nil {
		t.Fatal(err)
	}
	s, err := e.c.CreateSchedule(ctx, "nightly", "* * * * *", ScheduleOptions{ID: "n1", TimeZone: "Europe/Paris", Input: map[string]int{"n": 1}, Overlap: OverlapAllow})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "n1" || s.TimeZone != "Europe/Paris" || s.Overlap != OverlapAllow || s.NextAt == nil || string(s.Input) != `{"n":1}` {
		t.Fatalf("created %+v", s)
	}
	var ae *APIError
	_, err = e.c.CreateSchedule(ctx, "nightly", "* * * * *", ScheduleOptions{ID: "n1"})
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("duplicate id: %v", err)
	}
	_, err = e.c.CreateSchedule(ctx, "nightly", "61 * * * *", ScheduleOptions{})
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || len(ae.Errors) == 0 || !strings.Contains(ae.Errors[0].Location, "cron") {
		t.Fatalf("bad cron: %v", err)
	}
	_, err = e.c.CreateSchedule(ctx, "nightly", "@daily", ScheduleOptions{TimeZone: "Nowhere/Land"})
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || len(ae.Errors) == 0 || !strings.Contains(ae.Errors[0].Location, "time_zone") {
		t.Fatalf("bad time zone: %v", err)
	}
	if _, err := e.c.CreateSchedule(ctx, "nightly", "@daily", ScheduleOptions{ID: "n2", Paused: true}); err != nil {
		t.Fatal(err)
	}
	p, err := e.c.ListSchedules(ctx, 1, "")
	if err != nil || len(p.Schedules) != 1 || p.Schedules[0].ID != "n1" || p.NextCursor == "" {
		t.Fatalf("first page: %+v %v", p, err)
	}
	if p, err = e.c.ListSchedules(ctx, 1, p.NextCursor); err != nil || len(p.Schedules) != 1 || p.Schedules[0].ID != "n2" {
		t.Fatalf("second page: %+v %v", p, err)
	}
	if s, err = e.c.PauseSchedule(ctx, "n1"); err != nil || !s.Paused || s.NextAt != nil {
		t.Fatalf("pause: %+v %v", s, err)
	}
	if s, err = e.c.ResumeSchedule(ctx, "n1"); err != nil || s.Paused || s.NextAt == nil {
		t.Fatalf("resume: %+v %v", s, err)
	}
	now := time.Now()
	b, err := e.c.BackfillSchedule(ctx, "n1", now.Add(-5*time.Minute), now, 3)
	if err != nil || len(b.Ticks) != 3 || !b.Truncated {
		t.Fatalf("backfill: %+v %v", b, err)
	}
	r, err := e.c.Get(ctx, b.Ticks[0].Run)
	if err != nil || !strings.HasPrefix(r.Correlation, "schedule:n1:") {
		t.Fatalf("backfilled run: %+v %v", r, err)
	}
	if err := e.c.DeleteRun(ctx, r.ID, false); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("delete a running run: %v", err)
	}
	if err := e.c.DeleteRun(ctx, r.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Get(ctx, r.ID); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("deleted run: %v", err)
	}
	if err := e.c.DeleteSchedule(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.GetSchedule(ctx, "n1"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("deleted schedule: %v", err)
	}
	if err := e.c.DeleteSchedule(ctx, "n1"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("delete again: %v", err)
	}
}

// Rerun over HTTP: a run whose second step failed is rerun; the first
// step's output is reused (its body does not run again), the second runs
// with it.
func TestRerunAfterAFix(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var fetches, fixed atomic.Int32
	held := make(chan struct{}) // fixed == 2: "use" waits for it, so its run is running
	defer close(held)
	wf := Workflow("fix", "1").
		Task("fetch", Handle(func(StepContext, struct{}) (int, error) { fetches.Add(1); return 41, nil })).
		Task("use", Handle(func(_ StepContext, n int) (int, error) {
			switch fixed.Load() {
			case 0:
				return 0, Fatal(errors.New("bug"))
			case 2:
				<-held
			}
			return n + 1, nil
		}), After("fetch"), Input("${steps.fetch.output}"))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	old := waitRun(t, e.c, start(t, e.c, "fix", StartOptions{}).ID, 10*time.Second)
	if old.Status != RunFailed {
		t.Fatalf("first run %s", old.Status)
	}
	fixed.Store(1)
	nr, err := e.c.Rerun(context.Background(), old.ID, RerunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e.c, nr.ID, 10*time.Second)
	if r.Status != RunCompleted || string(r.Output) != "42" || r.RerunOf != old.ID {
		t.Fatalf("rerun %s output %s rerun_of %q", r.Status, r.Output, r.RerunOf)
	}
	if fetches.Load() != 1 {
		t.Fatalf("fetch ran %d times, want once (reused)", fetches.Load())
	}
	fixed.Store(2) // a run that cannot end before its rerun is asked for (it ended in 80 ms on CI rehearsal 20)
	var ae *APIError
	if _, err := e.c.Rerun(context.Background(), start(t, e.c, "fix", StartOptions{}).ID, RerunOptions{}); !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("rerun of a running run: %v", err)
	}
}
