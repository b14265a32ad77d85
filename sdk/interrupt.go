package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// InterruptError is what a body returns to interrupt its step (see
// Interrupt).
type InterruptError struct {
	// Payload is shown to whoever resumes the step (anything
	// JSON-encodable, at most 64 KiB encoded).
	Payload any
}

func (e *InterruptError) Error() string { return "cairn: step interrupted" }

// Interrupt returns the error a body returns to stop and ask for input:
// the engine records the step as interrupted with payload (shown by the
// CLI, the dashboard and Run's StepView.Interrupt) and offers no attempt
// until Client.ResumeStep answers it. The step then runs again, with
// StepContext.Resumed true and the answer. No retry budget is spent; the
// state patch, usage and summary set so far are recorded as a complete's.
//
//	var answer struct{ Approved bool }
//	if ok, err := ctx.Resumed(&answer); err != nil || !ok {
//		return nil, sdk.Interrupt(map[string]any{"question": "approve the draft?"})
//	}
func Interrupt(payload any) error { return &InterruptError{Payload: payload} }

// ResumeStep answers an interrupted step with value (anything
// JSON-encodable, nil for null): its next attempt runs at once with
// StepContext.Resumed true. Resuming again with the same value changes
// nothing; resuming a step that is not interrupted is a 409 (an
// *APIError).
func (c *Client) ResumeStep(ctx context.Context, run, step string, value any) (*Run, error) {
	raw, err := toJSON(value)
	if err != nil {
		return nil, fmt.Errorf("cairn: encoding the resume value: %w", err)
	}
	body := client.ResumeStepRequest{Value: raw}
	return c.viewed(ctx)(decodeView[cairn.Run](c)(c.api.ResumeStep(ctx, run, step, body)))
}

// Resumed is the lease's resume value, decoded into v.
func (s *stepCtx) Resumed(v any) (bool, error) {
	if !s.resumed {
		return false, nil
	}
	return true, decodeValue(s.resume, v)
}

// Interrupted is the payload the step last interrupted with, decoded into
// v.
func (s *stepCtx) Interrupted(v any) (bool, error) {
	if !s.resumed || len(s.interrupt) == 0 {
		return false, nil
	}
	return true, decodeValue(s.interrupt, v)
}

// publishInterrupt reports a body's interrupt: the step waits for a
// resume. A payload that cannot be encoded, or that the engine refuses
// (422), fails the attempt as fatal instead.
func (w *Worker) publishInterrupt(a *attempt, ie *InterruptError, patch map[string]json.RawMessage, usage Usage, log *slog.Logger) {
	if !a.finish() {
		return
	}
	payload, err := toJSON(ie.Payload)
	if err != nil {
		w.sendFail(w.pubCtx, a, cairn.ClassFatal, "encoding the interrupt's payload: "+err.Error(), patch, usage, log)
		return
	}
	if _, patch, err = w.sealOutcome(a.lease, nil, patch); err != nil { // codec.go
		w.sendFail(w.pubCtx, a, cairn.ClassFatal, err.Error(), nil, usage, log)
		return
	}
	req := client.InterruptRequest{Payload: payload, Usage: usageTo(usage), Summary: summaryOf(a)}
	if len(patch) > 0 {
		req.StatePatch = &patch
	}
	err = w.retry(w.pubCtx, a, func(ctx context.Context) error {
		resp, err := w.c.api.InterruptStepWithResponse(ctx, a.lease.Id, req)
		return w.c.check(err, resp)
	})
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == 422 {
		log.Error("the engine refused the interrupt; failing the attempt", "err", err)
		w.sendFail(w.pubCtx, a, cairn.ClassFatal, "the engine refused the interrupt: "+err.Error(), nil, usage, log)
		return
	}
	w.answered(a, "interrupt", err, log)
}
