package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/schedule"
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// Schedules start runs of a workflow on a cron calendar: records,
// calendar and the reaper's ticks are engine/internal/schedule's, which
// the API reaches through Engine.Schedules.

// Bounds of schedules.
const (
	// ScheduleIDPattern: schedule ids are part of keys (schedules/<id>).
	ScheduleIDPattern   = schedule.IDPattern
	MaxScheduleIDLength = schedule.MaxIDLength
	MaxBackfillTicks    = schedule.MaxBackfillTicks
	MinScheduleInterval = schedule.MinInterval
)

// newSchedules wires the engine's schedules to it.
func newSchedules(e *Engine) *schedule.Schedules {
	return schedule.New(schedule.Host{
		Store: e.store, Keys: e.keys, Now: e.now, NewID: newRunID,
		CheckStart: e.checkStartTarget, CheckWorkflow: e.checkRegistered,
		Start: func(ctx context.Context, workflow, version string, input json.RawMessage, correlation, key string) (*cairn.StartResult, error) {
			return e.StartRun(ctx, cairn.StartRequest{Workflow: workflow, Version: version, Input: input, Correlation: correlation, IdempotencyKey: key})
		},
		Cancel: e.CancelRun, Run: e.runState,
		TimerDue: timer.Due, PutTimer: e.timers.Put, DropTimers: e.timers.Drop,
		CursorRefused: e.cursorRefused, Log: e.log,
	})
}

// checkRegistered refuses a schedule of a workflow with no registered
// definition (of version, when it names one), naming the field: every
// tick would fail (a typo, or a worker not started yet: start it first).
func (e *Engine) checkRegistered(ctx context.Context, workflow, version string) error {
	var nf *NotFoundError
	if _, err := e.latestVersion(ctx, workflow); errors.As(err, &nf) {
		return &InvalidError{Field: "workflow", Message: fmt.Sprintf("no workflow %q is registered: register it (start its worker) before scheduling it", workflow)}
	} else if err != nil || version == "" {
		return err
	}
	_, err := e.definition(ctx, workflow, version)
	if errors.As(err, &nf) {
		return &InvalidError{Field: "version", Message: fmt.Sprintf("workflow %q has no registered version %q", workflow, version)}
	}
	return err
}

// runState is a run's workflow and status (what schedules and batches
// ask of a run).
func (e *Engine) runState(ctx context.Context, id string) (string, cairn.RunStatus, error) {
	r, err := e.readRun(ctx, id)
	if err != nil {
		return "", "", err
	}
	return r.Workflow, r.Status, nil
}

// Schedules are the engine's schedules: create, read, list, pause,
// resume, delete and backfill them (engine/internal/schedule documents
// each).
type Schedules = schedule.Schedules

// Schedules returns the engine's schedules.
func (e *Engine) Schedules() *Schedules { return e.schedules }
