// Package api is cairn's HTTP API: Huma v2 operations over the engine in
// engine. It is stateless: any number of instances may serve one
// bucket, and any instance may serve any request.
//
// The worker protocol is five calls under /v1/api (register, claim,
// started, heartbeat, complete/fail); runs, workflows and workers have
// their own operations. Every refusal is RFC 9457 problem JSON; a refused
// worker call is a 409 whose "reason" is one of already_applied, fenced,
// run_terminal, not_started, too_large (a closed set: cairn.Reason).
package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testclock"
)

// Version is the API's version in the OpenAPI document.
const Version = "1.0.0"

// BasePath prefixes every operation.
const BasePath = "/v1/api"

// Config configures the API.
type Config struct {
	// Keys are the accepted API keys. With none, DevMode must be set.
	Keys []auth.Key
	// DevMode serves every request without a key. For a laptop only; the
	// server says so loudly at start.
	DevMode bool
	// Logger [slog.Default()].
	Logger *slog.Logger
	// MaxStreams bounds the run streams (GET /runs/{run}/stream) this
	// instance serves at once [DefaultMaxStreams].
	MaxStreams int
	// TestClock, when set, is the engine's clock, which POST /dev/clock
	// moves (a test server only; testclock.go).
	TestClock *testclock.Clock
}

// API is the HTTP API over one engine.
type API struct {
	engine  *engine.Engine
	keys    []auth.Key
	devMode bool
	log     *slog.Logger
	streams streamLimit // the run streams served now (streams.go)
	clock   *testclock.Clock
	huma    huma.API
	mux     *http.ServeMux
	handler http.Handler
	// unreachable summarises store outages in the log (storelog.go).
	unreachable storeLog
	// docsJSON is the document the reference page reads (docsSpec, ui.go).
	docsOnce sync.Once
	docsJSON []byte
}

// New builds the API.
func New(e *engine.Engine, cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mux := http.NewServeMux()
	a := &API{engine: e, keys: cfg.Keys, devMode: cfg.DevMode, log: cfg.Logger, mux: mux, clock: cfg.TestClock}
	a.streams = make(streamLimit, cmp.Or(cfg.MaxStreams, DefaultMaxStreams))
	a.huma = humago.New(mux, humaConfig())
	a.huma.UseMiddleware(a.accessLog, a.authMiddleware(a.huma), a.refuseEmptyAndNull(a.huma))
	a.registerWorkerOps()
	a.registerRunOps()
	a.registerWorkflowOps()
	a.registerAdminOps()
	a.mountUI()
	a.registerScheduleOps()
	a.registerPayloadOps()
	a.registerBatchOps()
	a.registerStoreOps()
	a.registerPauseOps()
	a.registerEventOps()     // events.go
	a.registerStreamOps()    // streams.go
	a.registerClockOps()     // testclock.go
	a.registerCacheOps()     // cache.go
	a.registerUpdateOps()    // updates.go
	a.registerInterruptOps() // interrupts.go
	publishKindOptions(a.huma.OpenAPI().Components.Schemas)
	addLinks(a.huma.OpenAPI())
	a.handler = a.recoverPanics(a.routeProblems(mux))
	return a
}

// Handler returns the API's HTTP handler: the operations, with problem
// JSON for unknown paths and methods, and panics recovered per request.
func (a *API) Handler() http.Handler { return a.handler }

// OpenAPI returns the API's OpenAPI document.
func (a *API) OpenAPI() *huma.OpenAPI { return a.huma.OpenAPI() }

func humaConfig() huma.Config {
	c := huma.DefaultConfig("cairn", Version)
	c.Info.Description = "cairn is a durable workflow engine whose only state is an object-storage bucket. " +
		"Workers claim steps as leases over five calls (register, claim, started, heartbeat, complete/fail); " +
		"clients start, watch, signal and cancel runs. Authenticate with `Authorization: Bearer <key>`; " +
		"each operation names the scope its key needs (worker, execute, read; write grants worker and execute, admin everything)."
	c.Info.License = &huma.License{Name: "Apache-2.0", URL: "https://www.apache.org/licenses/LICENSE-2.0"}
	c.Servers = []*huma.Server{
		{URL: "http://127.0.0.1:8080", Description: "The local default: `cairn dev` (make run) listens here."},
		{URL: "/", Description: "The server that serves this document."},
	}
	c.Tags = Tags
	c.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "An API key: Authorization: Bearer <key>."},
	}
	c.DocsPath = "" // served by mountUI, with its assets embedded (ui.Docs)
	c.OpenAPIPath = "/openapi"
	c.SchemasPath = "/schemas"
	// No schema link: Huma's default create hook adds a `$schema` property
	// to every response schema (and body) and a Link header. Generated
	// clients then carry a field that is not data (docs/DECISIONS.md).
	c.CreateHooks = nil
	c.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	c.Components.Schemas.RegisterTypeAlias(reflect.TypeOf(cairn.Duration(0)), reflect.TypeOf(durationSchema("")))
	enumSchemas(c.Components.Schemas)
	return c
}

// Tags are the operation groups, each described once. Every operation
// names one of them (a test holds the two together).
var Tags = []*huma.Tag{
	{Name: "Workers", Description: "The worker protocol — register, claim, started, heartbeat, complete/fail — and the list of registered workers."},
	{Name: "Runs", Description: "Start, list, read, watch, signal and cancel runs of workflows."},
	{Name: "Workflows", Description: "Registered workflow definitions: each name and version is stored once and immutable."},
	{Name: "Schedules", Description: "Cron schedules that start runs: create, pause, resume, backfill, delete."},
	{Name: "Batches", Description: "Bulk operations: cancel or rerun every run matching a filter, as a tracked job."},
	{Name: "Store", Description: "The long-term store: a key-value store, in the bucket, for data that outlives runs."},
	{Name: "Operations", Description: "Liveness, readiness and the reaper: for load balancers, schedulers and operators."},
}

// op registers an operation that needs scope, mapping engine errors to
// problems.
func op[I, O any](a *API, o huma.Operation, scope string, h func(context.Context, *I) (*O, error)) {
	o.Path = BasePath + o.Path
	if scope != "" {
		o.Metadata = map[string]any{"scope": scope}
		o.Security = []map[string][]string{{"bearer": {}}}
		if o.Description != "" {
			o.Description += "\n\n"
		}
		o.Description += "Needs a key with the `" + scope + "` scope."
		o.Errors = append(o.Errors, http.StatusUnauthorized, http.StatusForbidden)
	} else {
		// Declared open (an empty requirement list), not left undeclared:
		// linters and generators then know no key is sent.
		o.Security = []map[string][]string{}
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 64 << 10
	}
	if hasBody(reflect.TypeFor[I]()) {
		// A body that is missing, is not JSON or breaks off is a 400; one
		// over the operation's limit a 413 (Huma answers both).
		o.Errors = append(o.Errors, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
	}
	o.Errors = append(o.Errors, http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusServiceUnavailable)
	params := paramLocations(reflect.TypeFor[I]())
	huma.Register(a.huma, o, func(ctx context.Context, in *I) (*O, error) {
		out, err := h(ctx, in)
		if err != nil {
			return nil, a.toProblem(ctx, err, params)
		}
		return out, nil
	})
}

// bodyOf is the output of an operation whose answer is one value, its
// body.
type bodyOf[T any] struct {
	Body T
}

// bodyOp registers, as op does, an operation whose handler returns the
// body of its answer.
func bodyOp[I, T any](a *API, o huma.Operation, scope string, h func(context.Context, *I) (T, error)) {
	op(a, o, scope, func(ctx context.Context, in *I) (*bodyOf[T], error) {
		v, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		return &bodyOf[T]{Body: v}, nil
	})
}

// hasBody reports whether an input type takes a request body.
func hasBody(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	_, ok := t.FieldByName("Body")
	return ok
}

// paramLocations maps the path and query parameters of an input type to
// their locations in problems: the engine names a field ("run", "cursor")
// without knowing whether the request carried it in the path, the query
// or the body.
func paramLocations(t reflect.Type) map[string]string {
	locs := map[string]string{}
	if t.Kind() != reflect.Struct {
		return locs
	}
	for i := range t.NumField() {
		f := t.Field(i)
		for _, in := range []string{"path", "query"} {
			if name := f.Tag.Get(in); name != "" {
				locs[name] = in + "." + name
			}
		}
	}
	return locs
}

// nonNil is s, or an empty slice for nil: arrays the spec declares
// required and non-null are sent as [], never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// audited answers (v, err), the read of run's contents by operation op,
// once the read is recorded in the audit log with the key that made it; a
// read that failed is not recorded.
func audited[T any](ctx context.Context, a *API, op, run string, v T, err error) (T, error) {
	if err == nil {
		err = a.engine.Audit(ctx, who(ctx), op, run)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func who(ctx context.Context) string {
	if p, ok := ctx.Value(principalKey{}).(principal); ok {
		return p.id
	}
	return "anonymous"
}

// ---- Worker protocol ----

type registerInput struct {
	Body cairn.RegisterRequest
}

type claimInput struct {
	Body cairn.ClaimRequest
}

type claimOutput struct {
	Body struct {
		Leases  []cairn.Lease `json:"leases" nullable:"false" doc:"Up to max leases; empty when nothing became ready while the claim was held."`
		PauseMs int64         `json:"pause_ms,omitempty" doc:"Set on an empty answer when the server holds claims briefly (CAIRN_CLAIM_PAUSE, e.g. on Lambda, where a held claim takes an execution environment): wait up to this long before claiming again. Other workers' claims and the hint bus pick up work meanwhile. Absent: claim again at once."`
	}
}

type leaseInput struct {
	Lease string `path:"lease" maxLength:"2048" doc:"The lease id from claim."`
}

type heartbeatManyInput struct {
	Body struct {
		Leases []string `json:"leases" nullable:"false" minItems:"1" maxItems:"100" doc:"Lease ids to extend."`
	}
}

type heartbeatManyOutput struct {
	Body struct {
		Results []cairn.HeartbeatResult `json:"results" nullable:"false" doc:"One per lease, in order."`
	}
}

type completeInput struct {
	Lease string `path:"lease" maxLength:"2048"`
	Body  cairn.CompleteRequest
}

type checkpointInput struct {
	Lease string `path:"lease" maxLength:"2048"`
	Body  cairn.CheckpointRequest
}

type failInput struct {
	Lease string `path:"lease" maxLength:"2048"`
	Body  cairn.FailRequest
}

var protocolErrors = []int{http.StatusConflict, http.StatusNotFound}

// registerWorkerOps registers the worker protocol: how a worker joins and
// gets leases, then what it does with each lease.
func (a *API) registerWorkerOps() {
	a.registerClaimOps()
	a.registerLeaseOps()
}

// registerClaimOps registers how a worker joins and gets work: register,
// then claim.
func (a *API) registerClaimOps() {
	bodyOp(a, huma.Operation{
		OperationID: "registerWorker", Method: http.MethodPost, Path: "/workers/register", Tags: []string{"Workers"},
		Summary:      "Register a worker and the workflows it serves",
		Description:  "Stores each definition (create-only; the same content again is a no-op, other content under a known name and version is a 409) and the worker's record. The answer carries lease_ttl_ms and heartbeat_ms, and the worker's id: the one given, or one the server generated when worker_id was absent, which the worker then names in its claims.",
		MaxBodyBytes: 4 << 20, Errors: []int{http.StatusConflict},
	}, auth.ScopeWorker, func(ctx context.Context, in *registerInput) (*cairn.RegisterResponse, error) {
		return a.engine.Register(ctx, in.Body)
	})
	op(a, huma.Operation{
		OperationID: "stopWorker", Method: http.MethodPost, Path: "/workers/{worker}/stop", Tags: []string{"Workers"},
		Summary:       "Say a worker stopped",
		Description:   "A worker that drained and stops says so: it is listed as gone (alive false, stopped_at) at once instead of after the alive window. A worker that registers again (every start does) is alive. Sending it is optional: a worker that dies without it is gone once the alive window passes.",
		DefaultStatus: http.StatusNoContent, Errors: []int{http.StatusNotFound},
	}, auth.ScopeWorker, func(ctx context.Context, in *stopWorkerInput) (*struct{}, error) {
		return nil, a.engine.StopWorker(ctx, in.Worker)
	})
	op(a, huma.Operation{
		OperationID: "claimSteps", Method: http.MethodPost, Path: "/steps/claim", Tags: []string{"Workers"},
		Summary:     "Claim runnable steps as leases",
		Description: "Returns up to max leases. When none is ready the request is held up to wait_ms (never more than the server's claim hold, at most 4/5 of its max request time) and may return empty early: claim again, after pause_ms when the answer carries it. A claim scoped to a run answers 409 run_terminal once the run has ended.",
		Errors:      protocolErrors,
	}, auth.ScopeWorker, func(ctx context.Context, in *claimInput) (*claimOutput, error) {
		// ClaimRequest (claim.go) declares no pattern for run, and the
		// engine answers a run id that cannot exist as not found: refuse
		// it here, naming body.run.
		if in.Body.Run != "" {
			if err := engine.CheckRunID("run", in.Body.Run); err != nil {
				return nil, err
			}
		}
		leases, err := a.engine.Claim(ctx, in.Body)
		if err != nil {
			return nil, err
		}
		noteLeases(ctx, len(leases))
		out := &claimOutput{}
		out.Body.Leases = nonNil(leases)
		if len(leases) == 0 {
			out.Body.PauseMs = a.engine.ClaimPause().Milliseconds()
		}
		return out, nil
	})
}

// registerLeaseOps registers what a worker does with a lease it holds:
// declare it started, keep it alive, end it.
func (a *API) registerLeaseOps() {
	bodyOp(a, huma.Operation{
		OperationID: "stepStarted", Method: http.MethodPost, Path: "/steps/{lease}/started", Tags: []string{"Workers"},
		Summary:     "Declare that a step's body is about to run",
		Description: "Sent before the body of an at_most_once lease: it separates offered from running, is recorded durably, and complete/fail without it is refused as not_started. For an at_least_once lease the claim is the start: started is optional, records nothing and only answers whether the lease is still live (the Go SDK does not send it).",
		Errors:      protocolErrors,
	}, auth.ScopeWorker, func(ctx context.Context, in *leaseInput) (*cairn.LeaseStatus, error) {
		return a.engine.Started(ctx, in.Lease)
	})
	bodyOp(a, huma.Operation{
		OperationID: "heartbeatStep", Method: http.MethodPost, Path: "/steps/{lease}/heartbeat", Tags: []string{"Workers"},
		Summary:     "Extend a lease",
		Description: "The only proof that the worker is alive. A fenced or run_terminal answer means: cancel the body.",
		Errors:      protocolErrors,
	}, auth.ScopeWorker, func(ctx context.Context, in *leaseInput) (*cairn.LeaseStatus, error) {
		return a.engine.Heartbeat(ctx, in.Lease)
	})
	op(a, huma.Operation{
		OperationID: "heartbeatSteps", Method: http.MethodPost, Path: "/steps/heartbeat", Tags: []string{"Workers"},
		Summary:     "Extend several leases in one call",
		Description: "A batched heartbeat: each lease is extended or refused on its own, with the reason a single heartbeat would give. A worker running many bodies sends one call per heartbeat period.",
	}, auth.ScopeWorker, func(ctx context.Context, in *heartbeatManyInput) (*heartbeatManyOutput, error) {
		out := &heartbeatManyOutput{}
		out.Body.Results = nonNil(a.engine.HeartbeatMany(ctx, in.Body.Leases))
		return out, nil
	})
	bodyOp(a, huma.Operation{
		OperationID: "completeStep", Method: http.MethodPost, Path: "/steps/{lease}/complete", Tags: []string{"Workers"},
		Summary:      "End a step with its output",
		Description:  "Records the output, merges the state patch (top-level keys replace) and prices the usage. already_applied means an earlier complete of this lease landed: treat it as success. With claim_next (eager dispatch) the answer also carries up to claim_next.max new leases for this worker, claimed after the complete was applied without holding: a busy worker does one call per step.",
		MaxBodyBytes: a.payloadBody(), Errors: protocolErrors,
	}, auth.ScopeWorker, func(ctx context.Context, in *completeInput) (*cairn.Ended, error) {
		r, err := a.engine.Complete(ctx, in.Lease, in.Body)
		if err != nil {
			return nil, err
		}
		if in.Body.ClaimNext != nil {
			noteLeases(ctx, len(r.Leases)) // eagerly dispatched leases are granted leases too
		}
		return r, nil
	})
	bodyOp(a, huma.Operation{
		OperationID: "checkpointStep", Method: http.MethodPost, Path: "/steps/{lease}/checkpoint", Tags: []string{"Workers"},
		Summary:      "Record a function step's operations",
		Description:  "For a function step (a durable function's driver): adds operations to the step's history, which a later attempt's lease carries for replay, and with suspend ends this attempt and schedules the next at suspend.until. Refused like a heartbeat once the attempt is not current (fenced, run_terminal): a fenced driver checkpoints nothing. One run-record write.",
		MaxBodyBytes: a.payloadBody(), Errors: protocolErrors,
	}, auth.ScopeWorker, func(ctx context.Context, in *checkpointInput) (*cairn.Checkpointed, error) {
		return a.engine.Checkpoint(ctx, in.Lease, in.Body)
	})
	bodyOp(a, huma.Operation{
		OperationID: "failStep", Method: http.MethodPost, Path: "/steps/{lease}/fail", Tags: []string{"Workers"},
		Summary:      "End a step's attempt with an error",
		Description:  "The error class decides what follows: retryable (and typed classes not listed as non-retryable) retry with backoff within the step's budget; fatal fails the step; unservable re-queues the attempt at once without spending budget.",
		MaxBodyBytes: a.payloadBody(), Errors: protocolErrors,
	}, auth.ScopeWorker, func(ctx context.Context, in *failInput) (*cairn.Ended, error) {
		return a.engine.Fail(ctx, in.Lease, in.Body)
	})
}

// ---- Runs ----

type startInput struct {
	Body cairn.StartRequest
}

type runInput struct {
	Run string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$" doc:"Run id."`
}

type getRunInput struct {
	Run    string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$" doc:"Run id."`
	WaitMs int64  `query:"wait_ms" minimum:"0" maximum:"3600000" doc:"Hold the request until the run ends, up to this long (capped at 4/5 of the max request time): waiting for a run's outcome in one request. 0 answers at once."`
}

type runStatusInput struct {
	Run     string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$"`
	After   int64  `query:"after" minimum:"0" doc:"Wait for a rev greater than this."`
	WaitMs  int64  `query:"wait_ms" minimum:"0" maximum:"3600000" doc:"Hold up to this long for a change (capped at 4/5 of the max request time)."`
	Holders bool   `query:"holders" doc:"Also read who holds each ready task step (one lease read per ready step, at most 100): what a live progress display asks for; a claim does not change the run's rev, so it does not end a wait."`
}

type stepInputInput struct {
	Run     string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$" doc:"Run id."`
	Step    string `path:"step" maxLength:"80" doc:"Step id, or a map item's id (<step>.<index>)."`
	Attempt int    `path:"attempt" minimum:"1" maximum:"1000000" doc:"Attempt number."`
}

type stopWorkerInput struct {
	Worker string `path:"worker" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$" doc:"The worker's id."`
}

type listRunsInput struct {
	Workflow string          `query:"workflow" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$" doc:"Only runs of this workflow."`
	Status   cairn.RunStatus `query:"status" doc:"Only runs in this status."`
	// Correlation and the time range filter the rows the listing reads,
	// as workflow and status do (a page may be short with a cursor).
	Correlation   string    `query:"correlation" maxLength:"256" doc:"Only runs started with this correlation."`
	IDPrefix      string    `query:"id_prefix" maxLength:"64" pattern:"^[0-9A-Za-z]*$" doc:"Only runs whose id starts with this."`
	StartedAfter  time.Time `query:"started_after" doc:"Only runs started at or after this time (RFC 3339)."`
	StartedBefore time.Time `query:"started_before" doc:"Only runs started before this time (RFC 3339)."`
	Attr          []string  `query:"attr,explode" maxItems:"8" doc:"Only runs whose search attribute satisfies this condition: name:value (equal), name>value, name>=value, name<value or name<=value. Repeat for several (all must hold). A value is typed as attributes are: true/false a boolean, a number a number, an RFC 3339 time a time, anything else (or \"quoted\") a string. The listing reads the attribute index of the first condition's name: its runs come by value, then newest first (an equality: newest first)."`
	Limit         int       `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Runs read per page."`
	Cursor        string    `query:"cursor" maxLength:"2048" pattern:"^[A-Za-z0-9_-]*$" doc:"next_cursor of the previous page (opaque, base64url)."`
}

type journalOutput struct {
	Body struct {
		Entries []cairn.JournalEntry `json:"entries" nullable:"false"`
	}
}

type cancelInput struct {
	Run  string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$"`
	Body struct {
		Reason string `json:"reason,omitempty" maxLength:"1000"`
	}
}

type rerunInput struct {
	Run  string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$" doc:"The ended run to rerun."`
	Body cairn.RerunRequest
}

type eventInput struct {
	Run  string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$"`
	Body cairn.EventRequest
}

// registerRunOps registers the operations on runs: those that start or
// change a run (scope execute), then those that read runs (scope read).
func (a *API) registerRunOps() {
	a.registerRunExecuteOps()
	a.registerRunReadOps()
}

// registerRunExecuteOps registers the operations that start or change a
// run: start, cancel, rerun, send an event.
func (a *API) registerRunExecuteOps() {
	bodyOp(a, huma.Operation{
		OperationID: "startRun", Method: http.MethodPost, Path: "/runs", Tags: []string{"Runs"}, DefaultStatus: http.StatusCreated,
		Summary:      "Start a run",
		Description:  "Starts a run of a workflow (its newest version unless one is named). With an idempotency_key, starting again returns the first run with existed=true.",
		MaxBodyBytes: a.payloadBody(), Errors: []int{http.StatusNotFound},
	}, auth.ScopeExecute, func(ctx context.Context, in *startInput) (*cairn.StartResult, error) {
		return a.engine.StartRun(ctx, in.Body)
	})
	bodyOp(a, huma.Operation{
		OperationID: "cancelRun", Method: http.MethodPost, Path: "/runs/{run}/cancel", Tags: []string{"Runs"},
		Summary:     "Cancel a run",
		Description: "Ends a running run as cancelled. Workers holding its leases are told run_terminal on their next call. Cancelling a run that already ended is a 409.",
		Errors:      []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *cancelInput) (*cairn.Run, error) {
		return a.engine.CancelRun(ctx, in.Run, in.Body.Reason)
	})
	bodyOp(a, huma.Operation{
		OperationID: "rerunRun", Method: http.MethodPost, Path: "/runs/{run}/rerun", Tags: []string{"Runs"}, DefaultStatus: http.StatusCreated,
		Summary:     "Rerun an ended run",
		Description: "Starts a new run of the ended run's workflow version, with its input, correlation, search attributes and final state, in which every step that completed (except from_step and the steps after it) is already completed with its old output, and the rest run again. The new run's rerun_of names the old one, which is not changed. Rerunning a running run is a 409.",
		Errors:      []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *rerunInput) (*cairn.StartResult, error) {
		return a.engine.RerunRun(ctx, in.Run, in.Body)
	})
	bodyOp(a, huma.Operation{
		OperationID: "sendEvent", Method: http.MethodPost, Path: "/runs/{run}/events", Tags: []string{"Runs"},
		Summary:      "Send an event to a run",
		Description:  "One wait takes the event: the first step, in the definition's order, waiting for its name (and matching its if); a wait step completes with the payload as its output. When none waits, the event is kept and taken by the next wait for that name. An event is seen by exactly one wait, whatever the timing. When no wait step of the run's definition waits for that name at all (likely a typo), the event is still kept, and the answer's warning says so. Events to an ended run are a 409.",
		MaxBodyBytes: a.payloadBody(), Errors: []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *eventInput) (*cairn.EventResult, error) {
		return a.engine.SendEvent(ctx, in.Run, in.Body)
	})
}

// registerRunReadOps registers the operations that read runs: list, get,
// follow the progress of one, read its journal.
func (a *API) registerRunReadOps() {
	bodyOp(a, huma.Operation{
		OperationID: "listRuns", Method: http.MethodGet, Path: "/runs", Tags: []string{"Runs"},
		Summary:     "List runs, newest first",
		Description: "Cursor-paginated. Filters apply to each page read, so a filtered page may hold fewer runs than limit and still have a next_cursor.",
	}, auth.ScopeRead, func(ctx context.Context, in *listRunsInput) (*cairn.RunPage, error) {
		return a.engine.ListRuns(ctx, engine.ListRequest{Workflow: in.Workflow, Status: in.Status, Correlation: in.Correlation, IDPrefix: in.IDPrefix,
			StartedAfter: in.StartedAfter, StartedBefore: in.StartedBefore, Attrs: in.Attr, Limit: in.Limit, Cursor: in.Cursor})
	})
	bodyOp(a, huma.Operation{
		OperationID: "getStepInput", Method: http.MethodGet, Path: "/runs/{run}/steps/{step}/attempts/{attempt}/input", Tags: []string{"Runs"},
		Summary:     "Get the input an attempt was given",
		Description: "The rendered input the attempt's lease gave its worker, as the worker received it (a value over the inline limit stays a payload reference), when it was at most 8 KiB (kept: false and its size otherwise). Audited like reading the run.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *stepInputInput) (*cairn.InputView, error) {
		res, err := a.engine.StepInput(ctx, in.Run, in.Step, in.Attempt)
		return audited(ctx, a, "getStepInput", in.Run, res, err)
	})
	bodyOp(a, huma.Operation{
		OperationID: "getRun", Method: http.MethodGet, Path: "/runs/{run}", Tags: []string{"Runs"},
		Summary:     "Get a run",
		Description: "The run with every step's status, attempts, output and usage. Audited: the read is recorded with the key that made it. With wait_ms the request is held until the run ends (or wait_ms passes: then it answers the running run) and audited once, when it answers; a commit on any instance wakes it, and a run that changes many times costs no more than once: what a client waiting for a run's outcome sends.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *getRunInput) (*cairn.Run, error) {
		r, recorded, err := a.engine.AwaitRun(ctx, in.Run, time.Duration(in.WaitMs)*time.Millisecond, who(ctx), "getRun")
		if recorded { // the commit that ended the run recorded the read in the run's record
			return r, err
		}
		return audited(ctx, a, "getRun", in.Run, r, err)
	})
	bodyOp(a, huma.Operation{
		OperationID: "getRunStatus", Method: http.MethodGet, Path: "/runs/{run}/status", Tags: []string{"Runs"},
		Summary:     "Get a run's progress, optionally waiting for a change",
		Description: "Status and per-step progress without the run's contents (no input, outputs or state), so it is not audited: what watchers follow. With wait_ms, the request is held until the run's rev exceeds after or the run ends (capped like a claim); a commit on any instance wakes it (pushed over the bus, no polling).",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *runStatusInput) (*cairn.RunProgress, error) {
		s, err := a.engine.GetRunStatus(ctx, in.Run, in.After, time.Duration(in.WaitMs)*time.Millisecond)
		if err != nil {
			return nil, err
		}
		if in.Holders {
			if err := a.engine.ReadHolders(ctx, s); err != nil {
				return nil, err
			}
		}
		return s, nil
	})
	op(a, huma.Operation{
		OperationID: "getRunJournal", Method: http.MethodGet, Path: "/runs/{run}/journal", Tags: []string{"Runs"},
		Summary:     "Get a run's journal",
		Description: "What happened to the run, oldest first: which worker held each attempt, how each ended, events, retries. Audited.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *runInput) (*journalOutput, error) {
		j, err := a.engine.Journal(ctx, in.Run)
		if j, err = audited(ctx, a, "getRunJournal", in.Run, j, err); err != nil {
			return nil, err
		}
		out := &journalOutput{}
		out.Body.Entries = nonNil(j)
		return out, nil
	})
}

// ---- Workflows and workers ----

type listWorkflowsOutput struct {
	Body struct {
		Workflows []cairn.WorkflowSummary `json:"workflows" nullable:"false"`
	}
}

type workflowInput struct {
	Name    string `path:"name" maxLength:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]*$"`
	Version string `path:"version" maxLength:"64" pattern:"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"`
}

type listWorkersOutput struct {
	Body struct {
		Workers []cairn.WorkerInfo `json:"workers" nullable:"false"`
	}
}

func (a *API) registerWorkflowOps() {
	op(a, huma.Operation{
		OperationID: "listWorkflows", Method: http.MethodGet, Path: "/workflows", Tags: []string{"Workflows"},
		Summary:     "List registered workflows",
		Description: "Every workflow name with its registered versions, oldest first, and the newest (what a run starts when it names no version), sorted by name.",
	}, auth.ScopeRead, func(ctx context.Context, _ *struct{}) (*listWorkflowsOutput, error) {
		w, err := a.engine.ListWorkflows(ctx)
		if err != nil {
			return nil, err
		}
		out := &listWorkflowsOutput{}
		out.Body.Workflows = nonNil(w)
		return out, nil
	})
	bodyOp(a, huma.Operation{
		OperationID: "getWorkflow", Method: http.MethodGet, Path: "/workflows/{name}/versions/{version}", Tags: []string{"Workflows"},
		Summary:     "Get a workflow definition",
		Description: "The definition as registered: its steps, their kinds, dependencies, delivery and retry policies.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *workflowInput) (*cairn.Workflow, error) {
		return a.engine.GetWorkflow(ctx, in.Name, in.Version)
	})
	op(a, huma.Operation{
		OperationID: "listWorkers", Method: http.MethodGet, Path: "/workers", Tags: []string{"Workers"},
		Summary:     "List registered workers",
		Description: "Every worker that has registered: its labels, the name@version of each definition it serves, when it was last seen and whether it counts as alive.",
	}, auth.ScopeRead, func(ctx context.Context, _ *struct{}) (*listWorkersOutput, error) {
		w, err := a.engine.ListWorkers(ctx)
		if err != nil {
			return nil, err
		}
		out := &listWorkersOutput{}
		out.Body.Workers = nonNil(w)
		return out, nil
	})
}

// ---- Operations ----

type reapOutput struct {
	Body struct {
		engine.ReapStats
		DurationMs int64 `json:"duration_ms"`
	}
}

type healthOutput struct {
	Body struct {
		Status     string          `json:"status" example:"ok"`
		HeldClaims int             `json:"held_claims" doc:"Claims this instance holds now, waiting for work. Tools and tests wait on it instead of sleeping."`
		Build      cairn.BuildInfo `json:"build" doc:"Which cairn is running."`
	}
}

type readyOutput struct {
	Body struct {
		Status string          `json:"status" example:"ready"`
		Build  cairn.BuildInfo `json:"build"`
	}
}

func (a *API) registerAdminOps() {
	op(a, huma.Operation{
		OperationID: "runReaper", Method: http.MethodPost, Path: "/reaper/run", Tags: []string{"Operations"},
		Summary:     "Run one reaper pass",
		Description: "Recovers expired leases, fires due sleeps, wait timeouts and run deadlines, and re-announces unclaimed work. Idempotent and safe to run concurrently; the scheduled reaper function calls the same code.",
	}, auth.ScopeAdmin, func(ctx context.Context, _ *struct{}) (*reapOutput, error) {
		start := time.Now()
		s, err := a.engine.Reap(ctx)
		if err != nil {
			return nil, err
		}
		out := &reapOutput{}
		out.Body.ReapStats = s
		out.Body.DurationMs = time.Since(start).Milliseconds()
		return out, nil
	})
	op(a, huma.Operation{
		OperationID: "health", Method: http.MethodGet, Path: "/healthz", Tags: []string{"Operations"},
		Summary:     "Liveness",
		Description: "200 while the process serves HTTP; it reads nothing from the bucket (see readyz for that). Carries the build and the claims this instance holds. Needs no key.",
	}, "", func(ctx context.Context, _ *struct{}) (*healthOutput, error) {
		out := &healthOutput{}
		out.Body.Status = "ok"
		out.Body.Build = cairn.Build()
		if a.engine != nil {
			out.Body.HeldClaims = a.engine.HeldClaims()
		}
		return out, nil
	})
	op(a, huma.Operation{
		OperationID: "ready", Method: http.MethodGet, Path: "/readyz", Tags: []string{"Operations"},
		Summary:     "Readiness: the bucket answers",
		Description: "200 when this instance can reach its bucket (one read of an object that need not exist); 503 with Retry-After when it cannot. The notification bus is checked when the instance starts, and a lost bus costs latency, not work, so it does not make an instance unready.",
	}, "", func(ctx context.Context, _ *struct{}) (*readyOutput, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := a.engine.Ready(ctx); err != nil {
			a.log.WarnContext(ctx, "not ready: the bucket does not answer", "err", err)
			p := problem(http.StatusServiceUnavailable, "the bucket does not answer; this instance cannot serve requests now")
			p.headers = http.Header{"Retry-After": {"1"}}
			return nil, p
		}
		out := &readyOutput{}
		out.Body.Status = "ready"
		out.Body.Build = cairn.Build()
		return out, nil
	})
}

// Spec returns the OpenAPI document of the API, built without an engine.
func Spec() *huma.OpenAPI {
	return New(nil, Config{DevMode: true}).OpenAPI()
}
