package engine

import (
	"context"
	"encoding/json"

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
		CheckStart: e.checkStartTarget, Latest: e.latestVersion,
		Defined: func(ctx context.Context, workflow, version string) error {
			_, err := e.definition(ctx, workflow, version)
			return err
		},
		Start: func(ctx context.Context, workflow, version string, input json.RawMessage, correlation, key string) (*cairn.StartResult, error) {
			return e.StartRun(ctx, cairn.StartRequest{Workflow: workflow, Version: version, Input: input, Correlation: correlation, IdempotencyKey: key})
		},
		Cancel: e.CancelRun, Run: e.runState,
		TimerDue: timer.Due, PutTimer: e.timers.Put, DropTimers: e.timers.Drop,
		CursorRefused: e.cursorRefused, Log: e.log,
	})
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
