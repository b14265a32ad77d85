package sdk

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// A schedule, a page of them, a backfill's result and the overlap
// policies: the API's views (the root package's).
type (
	// Schedule is a cron schedule that starts runs of a workflow (see the
	// createSchedule operation).
	Schedule = cairn.Schedule
	// SchedulePage is a page of schedules.
	SchedulePage = cairn.SchedulePage
	// BackfillResult lists the ticks a backfill started (or found started).
	BackfillResult = cairn.BackfillResult
)

// Overlap policies of a schedule.
const (
	OverlapSkip           = cairn.OverlapSkip
	OverlapAllow          = cairn.OverlapAllow
	OverlapCancelPrevious = cairn.OverlapCancelPrevious
)

// ScheduleOptions are a new schedule's optional fields.
type ScheduleOptions struct {
	// ID names the schedule; default a generated id.
	ID string
	// Version to start; default the newest at each tick.
	Version string
	// TimeZone the expression is read in (IANA); default UTC.
	TimeZone string
	// Input of every run: any value that encodes to JSON, or a
	// json.RawMessage.
	Input any
	// Overlap is OverlapSkip (default), OverlapAllow or
	// OverlapCancelPrevious.
	Overlap string
	// Paused creates the schedule paused.
	Paused      bool
	Description string
}

// CreateSchedule creates a schedule that starts a run of workflow at each
// tick of cron (five fields, or @daily, @every 1h, ...).
func (c *Client) CreateSchedule(ctx context.Context, workflow, cron string, o ScheduleOptions) (*Schedule, error) {
	req := client.ScheduleRequest{
		Workflow: workflow, Cron: cron, Id: ptr(o.ID), Version: ptr(o.Version), TimeZone: ptr(o.TimeZone),
		Description: ptr(o.Description), Paused: ptr(o.Paused),
	}
	if o.Overlap != "" {
		ov := client.ScheduleRequestOverlap(o.Overlap)
		req.Overlap = &ov
	}
	var err error
	if req.Input, err = optionalJSON(o.Input, "schedule input"); err != nil {
		return nil, err
	}
	if c.codec != nil && len(req.Input) > 0 {
		clear, err := c.clearKeys(ctx, workflow, o.Version)
		if err != nil {
			return nil, err
		}
		if req.Input, err = sealTop(c.codec, req.Input, clear); err != nil {
			return nil, fmt.Errorf("cairn: encrypting the schedule input: %w", err)
		}
	}
	return decodeView[Schedule](c)(c.api.CreateSchedule(ctx, req))
}

// GetSchedule returns a schedule.
func (c *Client) GetSchedule(ctx context.Context, id string) (*Schedule, error) {
	return decodeView[Schedule](c)(c.api.GetSchedule(ctx, id))
}

// ListSchedules returns a page of schedules by id (limit ≤ 100; cursor
// from the previous page's NextCursor).
func (c *Client) ListSchedules(ctx context.Context, limit int, cursor string) (*SchedulePage, error) {
	p := &client.ListSchedulesParams{Cursor: ptr(cursor)}
	if limit > 0 {
		l := int64(limit)
		p.Limit = &l
	}
	return decodeView[SchedulePage](c)(c.api.ListSchedules(ctx, p))
}

// PauseSchedule stops a schedule's ticks until ResumeSchedule.
func (c *Client) PauseSchedule(ctx context.Context, id string) (*Schedule, error) {
	return decodeView[Schedule](c)(c.api.PauseSchedule(ctx, id))
}

// ResumeSchedule resumes a paused schedule from now on.
func (c *Client) ResumeSchedule(ctx context.Context, id string) (*Schedule, error) {
	return decodeView[Schedule](c)(c.api.ResumeSchedule(ctx, id))
}

// DeleteSchedule deletes a schedule; the runs it started stay.
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	resp, err := c.api.DeleteScheduleWithResponse(ctx, id)
	return c.check(err, resp)
}

// BackfillSchedule starts the runs of the ticks in (from, to], at most max
// (≤ 100; 0 for 100). Ticks that already have a run are reported with
// Existed and not started again.
func (c *Client) BackfillSchedule(ctx context.Context, id string, from, to time.Time, max int) (*BackfillResult, error) {
	req := client.BackfillRequest{From: from, To: to}
	if max > 0 {
		m := int64(max)
		req.Max = &m
	}
	return decodeView[BackfillResult](c)(c.api.BackfillSchedule(ctx, id, req))
}

// DeleteRun deletes an ended run now (its record, leases, idempotency key
// and timer). A running run is a 409 unless force, which cancels it
// first. Needs the admin scope.
func (c *Client) DeleteRun(ctx context.Context, run string, force bool) error {
	resp, err := c.api.DeleteRunWithResponse(ctx, run, &client.DeleteRunParams{Force: ptr(force)})
	return c.check(err, resp)
}
