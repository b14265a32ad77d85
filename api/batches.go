package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- Batches: bulk cancel, rerun, pause and resume ----

type createBatchInput struct {
	Body cairn.BatchRequest
}

type batchIDInput struct {
	Batch string `path:"batch" minLength:"26" maxLength:"26" pattern:"^[0-9A-Z]+$" doc:"Batch id."`
}

func (a *API) registerBatchOps() {
	bodyOp(a, huma.Operation{
		OperationID: "createBatch", Method: http.MethodPost, Path: "/batches", Tags: []string{"Batches"}, DefaultStatus: http.StatusAccepted,
		Summary:     "Cancel, rerun, pause or resume every run matching a filter",
		Description: "Starts a batch job over the runs matching the filter (status, workflow, start time; at least one), newest first: cancel each running (or paused) one, rerun each ended one (once, with the idempotency key batch:<id>:<run>), pause each running one, or resume each paused one. The call does the first page of 100 runs and answers with the batch; the reaper does the rest, 500 runs a pass, and any instance or reaper goes on where a dead one stopped. Follow it with getBatch.",
	}, auth.ScopeExecute, func(ctx context.Context, in *createBatchInput) (*cairn.Batch, error) {
		return a.engine.Batches().Start(ctx, in.Body)
	})
	bodyOp(a, huma.Operation{
		OperationID: "getBatch", Method: http.MethodGet, Path: "/batches/{batch}", Tags: []string{"Batches"},
		Summary:     "Get a batch",
		Description: "A batch's state (running, done) and counters: runs scanned, matched, applied, skipped, failed.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *batchIDInput) (*cairn.Batch, error) {
		return a.engine.Batches().Get(ctx, in.Batch)
	})
}
