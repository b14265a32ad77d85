package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- The steps' result cache ----

type invalidateCacheInput struct {
	Workflow string `path:"workflow" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Workflow name."`
	Step     string `path:"step" maxLength:"64" pattern:"^[A-Za-z][A-Za-z0-9_-]*$" doc:"Step id."`
	Key      string `query:"key" maxLength:"4096" doc:"One key's entry only: the key's rendered value, as JSON (a string is quoted: \"https://example.com\"). Absent: every entry of the step."`
}

// registerCacheOps registers the result cache's invalidation.
func (a *API) registerCacheOps() {
	bodyOp(a, huma.Operation{
		OperationID: "invalidateCache", Method: http.MethodDelete, Path: "/cache/{workflow}/{step}", Tags: []string{"Workflows"},
		Summary: "Invalidate a step's result cache",
		Description: "Deletes the result cache entries of a workflow's step (every version's: they share them): one key's, or all of them. " +
			"The next attempt of the step with a deleted key runs on a worker and writes the entry again. " +
			"One DELETE on the bucket for a key; for a step, a LIST a page of 1,000 entries and a DELETE each. Deleting what is not there is not an error.",
	}, auth.ScopeExecute, func(ctx context.Context, in *invalidateCacheInput) (*cairn.CacheInvalidation, error) {
		var key json.RawMessage
		if in.Key != "" {
			key = json.RawMessage(in.Key)
		}
		n, err := a.engine.Results().Invalidate(ctx, in.Workflow, in.Step, key)
		return &cairn.CacheInvalidation{Deleted: n}, err
	})
}
