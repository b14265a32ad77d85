package engine

import (
	"context"
	"encoding/json"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/payload"
)

// Large payloads by reference: engine/internal/payload stores them; here
// are the engine's limits and its calls. Templates resolve the
// references their expressions name (lazily, only those, under a byte
// budget per render); GET /runs/{run} resolves up to ViewResolveBytes and
// leaves the rest as references, which the SDKs fetch from
// /runs/{run}/payloads/{sha256} (workers: /steps/{lease}/payloads/
// {sha256}).

// Payload defaults.
const (
	// DefaultPayloadInlineMax: values up to 64 KiB stay in the run record.
	DefaultPayloadInlineMax = 64 << 10
	// DefaultMaxPayloadBytes caps one payload: an input, an output, a
	// state value, an event payload.
	DefaultMaxPayloadBytes = 32 << 20
	// DefaultViewResolveBytes caps what one GET /runs/{run} resolves.
	DefaultViewResolveBytes = 4 << 20
	// DefaultRenderResolveBytes caps what one render resolves.
	DefaultRenderResolveBytes = 32 << 20
)

// IsPayloadRef reports whether raw is a reference to a payload object.
func IsPayloadRef(raw json.RawMessage) bool {
	_, ok := cairn.AsPayloadRef(raw)
	return ok
}

// PayloadTooLargeError: resolving a reference would pass a budget.
type PayloadTooLargeError = payload.TooLargeError

// Payload returns payload sha of run (GET /runs/{run}/payloads/{sha256}).
func (e *Engine) Payload(ctx context.Context, run, sha string) (json.RawMessage, error) {
	if err := keys.RunID.Check("run", run); err != nil {
		return nil, err
	}
	if !cairn.ValidSHA256(sha) {
		return nil, &InvalidError{Field: "sha256", Message: "must be 64 lowercase hex digits"}
	}
	return e.payloads.Read(ctx, run, sha, false)
}

// LeasePayload returns payload sha of the run a lease is of, for its
// worker (GET /steps/{lease}/payloads/{sha256}): the lease proves the
// worker was handed that run's data. A lease that ended still proves it.
func (e *Engine) LeasePayload(ctx context.Context, lease, sha string) (json.RawMessage, error) {
	if !cairn.ValidSHA256(sha) {
		return nil, &InvalidError{Field: "sha256", Message: "must be 64 lowercase hex digits"}
	}
	tok, err := leaseArg(lease)
	if err != nil {
		return nil, err
	}
	tok, _, _, err = e.lease(ctx, tok)
	if err != nil {
		return nil, err
	}
	return e.payloads.Read(ctx, tok.Run, sha, true)
}

// checkPayload refuses a payload over MaxOutputBytes, naming field.
func (e *Engine) checkPayload(field string, raw json.RawMessage) error {
	return payload.CheckSize(field, raw, e.cfg.MaxOutputBytes)
}

// resolver is a render's Resolve: it reads the references of run, at
// most RenderResolveBytes in all. ctx nil: a render inside a run
// mutation, bounded by its own timeout.
func (e *Engine) resolver(ctx context.Context, run string) func(json.RawMessage) (json.RawMessage, error) {
	return e.payloads.Resolver(ctx, run, e.cfg.RenderResolveBytes)
}

// isPayloadReadError reports whether a render failed only because the
// store failed (a claim answers it as a store error).
func isPayloadReadError(err error) bool { return payload.IsReadError(err) }

// externalizeEnd stores a complete's output and a complete's or fail's
// state values by reference where they must be, in place.
func (e *Engine) externalizeEnd(ctx context.Context, run string, output *json.RawMessage, patch map[string]json.RawMessage) error {
	if output != nil {
		ref, err := e.payloads.Externalize(ctx, run, *output)
		if err != nil {
			return err
		}
		*output = ref
	}
	return e.payloads.ExternalizeMap(ctx, run, patch)
}

// payloadValues are r's fields that hold values by reference, for
// engine/internal/payload to change in place.
func payloadValues(r *runRecord) payload.Values {
	v := payload.Values{Run: r.ID, Input: &r.Input, State: r.State}
	for id, st := range r.Steps {
		v.Steps = append(v.Steps, payload.StepValues{ID: id, Output: &st.Output, Ops: st.Ops, Completed: st.Status == cairn.StepCompleted})
	}
	return v
}

// externalizeStart stores a new run's input and state values by
// reference where they must be (under the new run's id, before its
// record is created), checking each against the per-payload limit.
func (e *Engine) externalizeStart(ctx context.Context, r *runRecord) error {
	return e.payloads.ExternalizeStart(ctx, payloadValues(r), e.cfg.MaxOutputBytes)
}

// resolveRecord replaces the references of r's input, state and the
// outputs of its completed steps (but those in skip) by their values, for
// a rerun that copies them into a new run.
func (e *Engine) resolveRecord(ctx context.Context, r *runRecord, skip map[string]bool) error {
	return e.payloads.ResolveRecord(ctx, payloadValues(r), skip)
}

// mutateSpilling applies a complete's or fail's mutation m, keeping the
// run record small (payload.Spilling): this instance's cached copy of the
// record tells whether it is already large, and a too_large refusal
// whether to spill and apply it once more.
func (e *Engine) mutateSpilling(ctx context.Context, run string, output *json.RawMessage, patch map[string]json.RawMessage, m mutationOf[*cairn.Ended]) (*cairn.Ended, error) {
	apply := func() (*cairn.Ended, error) { return mutate(ctx, e.commits, run, m) }
	if e.cfg.PayloadInlineMax < 0 {
		return apply()
	}
	data, _, cached := e.commits.Cache().Get(run)
	return payload.Spilling(ctx, e.payloads, run, output, patch, cached && len(data) > e.cfg.MaxRunRecordBytes/4, apply, func(err error) bool {
		reason, ok := IsRejection(err)
		return ok && reason == cairn.ReasonTooLarge
	})
}
