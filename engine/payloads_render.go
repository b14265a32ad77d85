package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cairn-dev/cairn/engine/internal/payload"
)

// resolver is a render's Resolve: it reads the references of run, at
// most RenderResolveBytes in all. ctx nil: a render inside a run
// mutation, bounded by its own timeout.
func (e *Engine) resolver(ctx context.Context, run string) func(json.RawMessage) (json.RawMessage, error) {
	budget := payload.NewBudget(e.cfg.RenderResolveBytes)
	return func(raw json.RawMessage) (json.RawMessage, error) {
		c := ctx
		if c == nil {
			var cancel context.CancelFunc
			c, cancel = payloadCtx()
			defer cancel()
		}
		b, err := e.payloads.Resolve(c, run, raw, budget)
		var (
			nf   *NotFoundError
			big  *PayloadTooLargeError
			corr *InternalError
		)
		if err != nil && !errors.As(err, &nf) && !errors.As(err, &big) && !errors.As(err, &corr) {
			err = &payloadReadError{err}
		}
		return b, err
	}
}

// payloadReadError: a payload could not be read for now (the store
// failed). A claim answers it as a store error instead of failing the
// step's render.
type payloadReadError struct{ err error }

func (e *payloadReadError) Error() string { return "reading a payload: " + e.err.Error() }
func (e *payloadReadError) Unwrap() error { return e.err }

// isPayloadReadError reports whether a render failed only because the
// store failed.
func isPayloadReadError(err error) bool {
	var p *payloadReadError
	return errors.As(err, &p)
}
