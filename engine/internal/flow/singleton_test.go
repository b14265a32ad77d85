package flow

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// Singleton: a free key is taken; with skip, a running holder is
// answered (a placeholder while its record is not written yet); with
// cancel_running, the holder is cancelled and the key taken.
func TestSingleton(t *testing.T) {
	ctx := context.Background()
	tbl := NewTable(mem.New(), keys.Layout{}, time.Now, nil)
	status := map[string]cairn.RunStatus{}
	var cancelled []string
	host := SingletonHost{
		State: func(_ context.Context, run string) (string, cairn.RunStatus, error) {
			if st, ok := status[run]; ok {
				return "w", st, nil
			}
			return "", "", &errs.NotFoundError{What: "run", ID: run}
		},
		GetRun: func(_ context.Context, run string) (*cairn.Run, error) {
			return nil, &errs.NotFoundError{What: "run", ID: run}
		},
		Cancel: func(_ context.Context, run, _ string) (*cairn.Run, error) {
			cancelled = append(cancelled, run)
			status[run] = cairn.RunCancelled
			return nil, nil
		},
	}
	vars := render.Vars{Workflow: "w"}
	skip := &SingletonPlan{Mode: cairn.SingletonSkip}
	if res, err := tbl.Singleton(ctx, skip, vars, "r1", host); res != nil || err != nil {
		t.Fatalf("a free key: %v, %v; want it taken", res, err)
	}
	status["r1"] = cairn.RunRunning
	res, err := tbl.Singleton(ctx, skip, vars, "r2", host)
	if err != nil || res == nil || !res.Skipped || res.Run.ID != "r1" || res.Run.Status != cairn.RunRunning {
		t.Fatalf("skip with r1 running: %+v, %v; want r1 answered", res, err)
	}
	cancel := &SingletonPlan{Mode: cairn.SingletonCancelRunning}
	if res, err := tbl.Singleton(ctx, cancel, vars, "r3", host); res != nil || err != nil || len(cancelled) != 1 || cancelled[0] != "r1" {
		t.Fatalf("cancel_running: %v, %v, cancelled %v; want r1 cancelled and the key taken", res, err, cancelled)
	}
	if res, err := tbl.Singleton(ctx, nil, vars, "r4", host); res != nil || err != nil {
		t.Fatalf("no singleton: %v, %v", res, err)
	}
	bad := &SingletonPlan{Key: mustTemplate(t, `"${input.k}"`)}
	var invalid *errs.InvalidError
	if _, err := tbl.Singleton(ctx, bad, vars, "r5", host); !errors.As(err, &invalid) || invalid.Field != "input" {
		t.Fatalf("a key that does not render: %v; want an invalid input", err)
	}
}
