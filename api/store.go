package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- The long-term store ----

type storeKeyInput struct {
	Namespace string `path:"namespace" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Namespace."`
	Key       string `path:"key" maxLength:"256" pattern:"^[A-Za-z0-9][A-Za-z0-9_.:@=+-]*$" doc:"Key."`
}

type putStoreInput struct {
	Namespace string `path:"namespace" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Namespace."`
	Key       string `path:"key" maxLength:"256" pattern:"^[A-Za-z0-9][A-Za-z0-9_.:@=+-]*$" doc:"Key."`
	Body      cairn.StorePutRequest
}

type deleteStoreInput struct {
	Namespace string `path:"namespace" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Namespace."`
	Key       string `path:"key" maxLength:"256" pattern:"^[A-Za-z0-9][A-Za-z0-9_.:@=+-]*$" doc:"Key."`
	IfVersion string `query:"if_version" maxLength:"512" pattern:"^[A-Za-z0-9_-]*$" doc:"Delete only this version of the value; another is a 409."`
}

type listStoreInput struct {
	Namespace string `path:"namespace" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Namespace."`
	Prefix    string `query:"prefix" maxLength:"256" pattern:"^([A-Za-z0-9][A-Za-z0-9_.:@=+-]*)?$" doc:"Only keys that start with this."`
	Cursor    string `query:"cursor" maxLength:"2048" pattern:"^[A-Za-z0-9_-]*$" doc:"next_cursor of the previous page."`
	Limit     int    `query:"limit" minimum:"0" maximum:"1000" doc:"Page size (default 100, cap 1000)."`
}

// registerStoreOps registers the long-term store's operations (scope
// store): read, write, delete a key, list a namespace's keys.
func (a *API) registerStoreOps() {
	const tag = "Store"
	bodyOp(a, huma.Operation{
		OperationID: "getStoreValue", Method: http.MethodGet, Path: "/store/{namespace}/{key}", Tags: []string{tag},
		Summary:     "Read a key of the long-term store",
		Description: "The value and its version. One GET on the bucket. A key with no value is a 404.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeStore, func(ctx context.Context, in *storeKeyInput) (*cairn.StoreEntry, error) {
		return a.engine.KV().Get(ctx, in.Namespace, in.Key)
	})
	bodyOp(a, huma.Operation{
		OperationID: "putStoreValue", Method: http.MethodPut, Path: "/store/{namespace}/{key}", Tags: []string{tag},
		Summary:      "Write a key of the long-term store",
		Description:  "Writes any JSON value (at most 1 MiB compacted): over the version if_version names only, or only where there is no value with if_absent; a value that does not match is a 409 and nothing is written. Answers the new version. One PUT on the bucket (conditional with a condition). Store writes are not part of a run's history: a retried step writes again.",
		MaxBodyBytes: 2 << 20, Errors: []int{http.StatusConflict},
	}, auth.ScopeStore, func(ctx context.Context, in *putStoreInput) (*cairn.StoreEntry, error) {
		return a.engine.KV().Put(ctx, in.Namespace, in.Key, in.Body)
	})
	op(a, huma.Operation{
		OperationID: "deleteStoreValue", Method: http.MethodDelete, Path: "/store/{namespace}/{key}", Tags: []string{tag}, DefaultStatus: http.StatusNoContent,
		Summary:     "Delete a key of the long-term store",
		Description: "Deleting a key with no value is not an error, unless if_version is set: then only that version is deleted, and another value (or none) is a 409.",
		Errors:      []int{http.StatusConflict},
	}, auth.ScopeStore, func(ctx context.Context, in *deleteStoreInput) (*struct{}, error) {
		return nil, a.engine.KV().Delete(ctx, in.Namespace, in.Key, in.IfVersion)
	})
	bodyOp(a, huma.Operation{
		OperationID: "listStoreKeys", Method: http.MethodGet, Path: "/store/{namespace}", Tags: []string{tag},
		Summary:     "List a namespace's keys",
		Description: "Keys in key order with their versions and sizes, not their values; cursor-paginated (one LIST on the bucket a page). A page may hold fewer keys than the limit and still have a next one.",
	}, auth.ScopeStore, func(ctx context.Context, in *listStoreInput) (*cairn.StorePage, error) {
		return a.engine.KV().List(ctx, in.Namespace, in.Prefix, in.Cursor, in.Limit)
	})
}
