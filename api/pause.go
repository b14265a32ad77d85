package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- Pausing and resuming a run ----

func (a *API) registerPauseOps() {
	bodyOp(a, huma.Operation{
		OperationID: "pauseRun", Method: http.MethodPost, Path: "/runs/{run}/pause", Tags: []string{"Runs"},
		Summary: "Pause a run",
		Description: "The run's status becomes paused: none of its steps is offered to a worker, and its sleeps, retry backoffs, wait timeouts and deadline that come due are acted on only at its resume. " +
			"Attempts held when it is paused go on, and their completes and fails are applied; the steps they make ready start at the resume. " +
			"Its child runs are not paused. Pausing a paused run changes nothing; pausing a run that ended is a 409. A paused run can be cancelled.",
		Errors: []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *runInput) (*cairn.Run, error) {
		return a.engine.PauseRun(ctx, in.Run)
	})
	bodyOp(a, huma.Operation{
		OperationID: "resumeRun", Method: http.MethodPost, Path: "/runs/{run}/resume", Tags: []string{"Runs"},
		Summary: "Resume a paused run",
		Description: "The run runs again: its ready steps are offered at once, the due times that passed while it was paused act now (a deadline that passed times it out), and the steps whose dependencies settled start. " +
			"Resuming a running run changes nothing; resuming a run that ended is a 409.",
		Errors: []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *runInput) (*cairn.Run, error) {
		return a.engine.ResumeRun(ctx, in.Run)
	})
}
