package flow

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// SingletonPlan is a workflow's compiled singleton option.
type SingletonPlan struct {
	Key  *render.Template // nil: one key for the workflow
	Mode string
}

// singletonHolder is a singleton key's object: the run that holds it.
type singletonHolder struct {
	Run string    `json:"run"`
	At  time.Time `json:"at"`
}

// SingletonGrace is how long a holder whose run is not found yet is taken
// as running: its start writes the holder, then the run (within the
// start's bound).
const SingletonGrace = time.Minute

// RunState is a run's workflow and status; an error for which
// errs.IsNotFound holds when there is no such run.
type RunState func(ctx context.Context, run string) (workflow string, status cairn.RunStatus, err error)

// HoldSingleton makes run the holder of a singleton key unless a running
// run holds it, which it returns: the key's object is created, or
// swapped from an ended holder (a run not found counts as running for
// SingletonGrace after it took the key). A concurrent start loses the
// create or the swap and finds the winner. One create when the key is
// free; a GET and a run read, then a swap, when its holder ended.
func (t *Table) HoldSingleton(ctx context.Context, scope, key, run string, state RunState) (string, error) {
	obj := t.keys.Singleton(scope, key)
	mine, _ := json.Marshal(singletonHolder{Run: run, At: t.now()})
	for try := 0; try < 8; try++ {
		_, err := t.bucket.Create(ctx, obj, mine)
		if !errors.Is(err, blob.ErrPreconditionFailed) {
			return "", err
		}
		h, ver, err := object.Read[singletonHolder](ctx, t.bucket, obj)
		if errors.Is(err, blob.ErrNotFound) {
			continue // deleted meanwhile: create again
		}
		if err != nil {
			return "", err
		}
		if h.Run == run {
			return "", nil // a retry of this start
		}
		_, status, err := state(ctx, h.Run)
		found := !errs.IsNotFound(err) && !errors.Is(err, blob.ErrNotFound)
		if err != nil && found {
			return "", err
		}
		if found && !status.Terminal() || !found && t.now().Sub(h.At) < SingletonGrace {
			return h.Run, nil
		}
		if _, err := t.bucket.Swap(ctx, obj, mine, ver); !errors.Is(err, blob.ErrPreconditionFailed) {
			return "", err
		}
	}
	return "", &blob.Error{Op: "singleton", Key: obj, Err: blob.ErrConflict}
}

// SingletonHost is what a start that takes its workflow's singleton key
// asks of the engine.
type SingletonHost struct {
	State  RunState
	GetRun func(ctx context.Context, run string) (*cairn.Run, error)
	Cancel func(ctx context.Context, run, reason string) (*cairn.Run, error)
}

// Singleton takes a workflow's singleton key (s; nil: none) for run id, a
// start whose template vars are vars: with mode skip, a running holder is
// answered instead (skipped); with cancel_running, it is cancelled first.
func (t *Table) Singleton(ctx context.Context, s *SingletonPlan, vars render.Vars, id string, host SingletonHost) (*cairn.StartResult, error) {
	if s == nil {
		return nil, nil
	}
	key, err := RenderKey(s.Key, vars)
	if err != nil {
		return nil, &errs.InvalidError{Field: "input", Message: "the workflow's singleton key does not render: " + err.Error()}
	}
	for range 3 {
		held, err := t.HoldSingleton(ctx, "singleton\x00"+vars.Workflow, key, id, host.State)
		if err != nil || held == "" {
			return nil, err
		}
		if s.Mode == cairn.SingletonSkip {
			r, err := host.GetRun(ctx, held)
			if errs.IsNotFound(err) { // its start is between the key and the record
				r, err = &cairn.Run{ID: held, Workflow: vars.Workflow, Status: cairn.RunRunning, State: map[string]json.RawMessage{}, Steps: []cairn.StepView{}, PendingEvents: []string{}}, nil
			}
			return &cairn.StartResult{Run: r, Existed: true, Skipped: true}, err
		}
		var ended *errs.ConflictError // it ended meanwhile: take the key
		if _, err := host.Cancel(ctx, held, "singleton: run "+id+" replaces it"); err != nil && !errors.As(err, &ended) {
			return nil, err
		}
	}
	return nil, &errs.UnavailableError{Err: errors.New("singleton key " + key + " still held after cancelling its run")}
}
