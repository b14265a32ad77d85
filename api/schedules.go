package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- Schedules, and deleting one run ----

type scheduleIDInput struct {
	Schedule string `path:"schedule" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Schedule id."`
}

type createScheduleInput struct {
	Body cairn.ScheduleRequest
}

type listSchedulesInput struct {
	Limit  int    `query:"limit" minimum:"0" maximum:"100" doc:"Page size (default and cap 100)."`
	Cursor string `query:"cursor" maxLength:"2048" pattern:"^[A-Za-z0-9_-]*$" doc:"next_cursor of the previous page."`
}

type backfillInput struct {
	Schedule string `path:"schedule" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Schedule id."`
	Body     cairn.BackfillRequest
}

type deleteRunInput struct {
	Run   string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$"`
	Force bool   `query:"force" doc:"Cancel the run first when it is still running."`
}

// registerScheduleOps registers the operations on schedules, those that
// change them (scope execute) and those that read them (scope read), and
// deleting one run.
func (a *API) registerScheduleOps() {
	a.registerScheduleExecuteOps()
	a.registerScheduleReadOps()
	a.registerDeleteRunOp()
}

// registerScheduleExecuteOps registers the operations that change a
// schedule or start runs from it: create, pause, resume, delete, backfill.
func (a *API) registerScheduleExecuteOps() {
	bodyOp(a, huma.Operation{
		OperationID: "createSchedule", Method: http.MethodPost, Path: "/schedules", Tags: []string{"Schedules"}, DefaultStatus: http.StatusCreated,
		Summary:      "Create a schedule",
		Description:  "Starts a run of the workflow at every tick of a cron expression in a time zone. The reaper fires due ticks: one run per tick however many reapers run (each tick's run has an idempotency key derived from the schedule and the tick). Ticks missed while no reaper ran fire once (the newest); backfill the others. An id that exists is a 409.",
		MaxBodyBytes: 2 << 20, Errors: []int{http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *createScheduleInput) (*cairn.Schedule, error) {
		return a.engine.Schedules().Create(ctx, in.Body)
	})
	bodyOp(a, huma.Operation{
		OperationID: "pauseSchedule", Method: http.MethodPost, Path: "/schedules/{schedule}/pause", Tags: []string{"Schedules"},
		Summary:     "Pause a schedule",
		Description: "No tick fires until it is resumed. Pausing a paused schedule changes nothing.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeExecute, func(ctx context.Context, in *scheduleIDInput) (*cairn.Schedule, error) {
		return a.engine.Schedules().Pause(ctx, in.Schedule)
	})
	bodyOp(a, huma.Operation{
		OperationID: "resumeSchedule", Method: http.MethodPost, Path: "/schedules/{schedule}/resume", Tags: []string{"Schedules"},
		Summary:     "Resume a schedule",
		Description: "Ticks fire again from now on; those that passed while it was paused do not (backfill them).",
		Errors:      []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *scheduleIDInput) (*cairn.Schedule, error) {
		return a.engine.Schedules().Resume(ctx, in.Schedule)
	})
	op(a, huma.Operation{
		OperationID: "deleteSchedule", Method: http.MethodDelete, Path: "/schedules/{schedule}", Tags: []string{"Schedules"}, DefaultStatus: http.StatusNoContent,
		Summary:     "Delete a schedule",
		Description: "No tick fires after it. The runs it started stay.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeExecute, func(ctx context.Context, in *scheduleIDInput) (*struct{}, error) {
		return nil, a.engine.Schedules().Delete(ctx, in.Schedule)
	})
	bodyOp(a, huma.Operation{
		OperationID: "backfillSchedule", Method: http.MethodPost, Path: "/schedules/{schedule}/backfill", Tags: []string{"Schedules"},
		Summary:     "Start the runs of past ticks",
		Description: "Starts a run for each tick in (from, to], oldest first, at most max (100). A tick that already has its run (it fired, or an earlier backfill) is not started again: it is listed with existed=true. Backfill ignores the overlap policy and a pause.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeExecute, func(ctx context.Context, in *backfillInput) (*cairn.BackfillResult, error) {
		return a.engine.Schedules().Backfill(ctx, in.Schedule, in.Body)
	})
}

// registerScheduleReadOps registers the operations that read schedules:
// list, get.
func (a *API) registerScheduleReadOps() {
	bodyOp(a, huma.Operation{
		OperationID: "listSchedules", Method: http.MethodGet, Path: "/schedules", Tags: []string{"Schedules"},
		Summary:     "List schedules",
		Description: "By id, cursor-paginated.",
	}, auth.ScopeRead, func(ctx context.Context, in *listSchedulesInput) (*cairn.SchedulePage, error) {
		return a.engine.Schedules().List(ctx, in.Limit, in.Cursor)
	})
	bodyOp(a, huma.Operation{
		OperationID: "getSchedule", Method: http.MethodGet, Path: "/schedules/{schedule}", Tags: []string{"Schedules"},
		Summary:     "Get a schedule",
		Description: "The schedule with its next tick, its newest run and its counters (fired, skipped, missed, failed).",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *scheduleIDInput) (*cairn.Schedule, error) {
		return a.engine.Schedules().Get(ctx, in.Schedule)
	})
}

// registerDeleteRunOp registers deleting one run ahead of its retention
// (scope admin).
func (a *API) registerDeleteRunOp() {
	op(a, huma.Operation{
		OperationID: "deleteRun", Method: http.MethodDelete, Path: "/runs/{run}", Tags: []string{"Runs"}, DefaultStatus: http.StatusNoContent,
		Summary:     "Delete an ended run",
		Description: "Deletes the run, its leases, its idempotency key and its timer now, rather than when its retention passes. A run still running is a 409 unless force=true, which cancels it first.",
		Errors:      []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeAdmin, func(ctx context.Context, in *deleteRunInput) (*struct{}, error) {
		return nil, a.engine.DeleteRun(ctx, in.Run, in.Force)
	})
}
