package api

import (
	"context"
	"net/http"

	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/engine"
	"github.com/danielgtaylor/huma/v2"
)

// Payloads by reference (engine/payloads.go): a value larger than the
// engine's inline limit is an object of its run, and where a run view or
// a lease holds its reference, {"$cairn_payload":{"sha256":…,"bytes":…}},
// clients fetch it here. Readers of runs use the run's route (read scope);
// a worker uses its lease's (worker scope: the lease proves the run).

type payloadInput struct {
	Run    string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$" doc:"Run id."`
	SHA256 string `path:"sha256" minLength:"64" maxLength:"64" pattern:"^[0-9a-f]{64}$" doc:"The payload's SHA-256 (hex), from its reference."`
}

type leasePayloadInput struct {
	Lease  string `path:"lease" maxLength:"2048" doc:"The lease id from claim."`
	SHA256 string `path:"sha256" minLength:"64" maxLength:"64" pattern:"^[0-9a-f]{64}$" doc:"The payload's SHA-256 (hex), from its reference."`
}

type payloadOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte `contentType:"application/json" doc:"The payload: the JSON value the reference stands for, byte for byte."`
}

func (a *API) registerPayloadOps() {
	op(a, huma.Operation{
		OperationID: "getRunPayload", Method: http.MethodGet, Path: "/runs/{run}/payloads/{sha256}", Tags: []string{"Runs"},
		Summary:     "Get a payload stored by reference",
		Description: "A run's input, a step's output, a state value or an event payload larger than the server's inline limit (64 KiB by default) is stored as its own object and appears in the run as a reference, {\"$cairn_payload\":{\"sha256\":…,\"bytes\":…}}, wherever GET /runs/{run} did not resolve it (it resolves up to 4 MiB per answer). This answers the value itself. Audited like getRun.",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeRead, func(ctx context.Context, in *payloadInput) (*payloadOutput, error) {
		b, err := a.engine.Payload(ctx, in.Run, in.SHA256)
		if b, err = audited(ctx, a, "getRunPayload", in.Run, b, err); err != nil {
			return nil, err
		}
		return &payloadOutput{ContentType: "application/json", Body: b}, nil
	})
	op(a, huma.Operation{
		OperationID: "getLeasePayload", Method: http.MethodGet, Path: "/steps/{lease}/payloads/{sha256}", Tags: []string{"Workers"},
		Summary:     "Get a payload of a lease's run",
		Description: "For workers: a lease's input, its steps' outputs and its state values larger than the server's inline limit arrive as references, {\"$cairn_payload\":{\"sha256\":…,\"bytes\":…}}; this answers the value one names. The lease proves the run (an ended lease still does).",
		Errors:      []int{http.StatusNotFound},
	}, auth.ScopeWorker, func(ctx context.Context, in *leasePayloadInput) (*payloadOutput, error) {
		b, err := a.engine.LeasePayload(ctx, in.Lease, in.SHA256)
		if err != nil {
			return nil, err
		}
		return &payloadOutput{ContentType: "application/json", Body: b}, nil
	})
}

// payloadBody is the body limit of a request that carries payloads (a
// complete's output and state patch, a start's input and state, an
// event): each may be up to the engine's per-payload limit.
func (a *API) payloadBody() int64 {
	max := int64(engine.DefaultMaxPayloadBytes)
	if a.engine != nil { // nil: the spec is being written
		max = int64(a.engine.Config().MaxOutputBytes)
	}
	return 2*max + 1<<20
}
