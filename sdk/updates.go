package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// Updates: a request sent to a live run that gets the run's answer. The
// run takes it as an event of its name — a wait step (Wait, with Answer
// naming the step whose output answers), or a durable function's
// WaitUpdate, which answers with Reply.

type (
	// Update is an update sent to a run and, once it is in, its answer.
	Update = cairn.Update
	// UpdateStatus is how far an update got: accepted, answered, failed.
	UpdateStatus = cairn.UpdateStatus
)

// Update statuses.
const (
	UpdateAccepted = cairn.UpdateAccepted
	UpdateAnswered = cairn.UpdateAnswered
	UpdateFailed   = cairn.UpdateFailed
)

// UpdateOptions are an update's optional settings.
type UpdateOptions struct {
	// ID makes sending safe to retry: the same update is answered, and
	// the run gets it once. Default: a new id, in the answer.
	ID string
	// Wait is how long the call holds for the answer (capped by the
	// server); 0 answers at once. An update not answered by then is
	// answered with status accepted: poll it with GetUpdate.
	Wait time.Duration
}

// SendUpdate sends update name with input (any value that encodes to
// JSON, or a json.RawMessage) to run, and holds up to opts.Wait for its
// answer. What cannot be delivered is an error (an *APIError): no
// wait of the run left to take name (422), the run ended (409), the same
// id sent before with another input (409).
func (c *Client) SendUpdate(ctx context.Context, run, name string, input any, opts UpdateOptions) (*Update, error) {
	req := client.UpdateRequest{Name: name, Id: ptr(opts.ID), WaitMs: ptr(opts.Wait.Milliseconds())}
	var err error
	if req.Input, err = optionalJSON(input, "update input"); err != nil {
		return nil, err
	}
	if req.Input, err = sealValue(c.codec, req.Input); err != nil {
		return nil, fmt.Errorf("cairn: encrypting the update's input: %w", err)
	}
	return c.answer(ctx, run)(c.api.SendUpdate(ctx, run, req))
}

// GetUpdate returns update id of run, held up to wait (0: at once) for
// its answer.
func (c *Client) GetUpdate(ctx context.Context, run, id string, wait time.Duration) (*Update, error) {
	params := &client.GetUpdateParams{WaitMs: ptr(wait.Milliseconds())}
	return c.answer(ctx, run)(c.api.GetUpdate(ctx, run, id, params))
}

// answer decodes an update, its answer read when stored by reference
// and decrypted.
func (c *Client) answer(ctx context.Context, run string) func(*http.Response, error) (*Update, error) {
	return func(resp *http.Response, err error) (*Update, error) {
		u, err := decodeView[Update](c)(resp, err)
		if err != nil {
			return nil, err
		}
		if err := resolveAll([]*json.RawMessage{&u.Answer}, func(ref cairn.PayloadRef) (json.RawMessage, error) { return c.RunPayload(ctx, run, ref) }); err != nil {
			return nil, err
		}
		if err := openValue(c.codec, &u.Answer); err != nil {
			return nil, codecError("an update's answer", err)
		}
		return u, nil
	}
}

// Answer makes a wait step's output answer an update the wait takes be
// the output of step, which must come after the wait (the wait's own
// output, the update's input, by default).
func Answer(step string) StepOption {
	return takes("answer", func(s *cairn.Step) { s.Answer = step })
}

// Received is an update a durable function's wait took.
type Received struct {
	// ID is the update's id ("" for an event sent to the run, which has
	// no caller to answer).
	ID string
	// Input is the update's input.
	Input json.RawMessage
}

// WaitUpdate waits, as WaitEvent does, for an update named update sent
// to the run (Client.SendUpdate, `cairn runs update`) and returns it:
// answer it with Reply.
func (fc *Durable) WaitUpdate(name, update string, timeout time.Duration) (Received, error) {
	op, err := fc.wait(name, update, timeout)
	if err != nil {
		return Received{}, err
	}
	in, err := fc.resolve(op.Result)
	return Received{ID: deref(op.Update), Input: in}, err
}

// Reply answers update u with answer (any value that encodes to JSON):
// what its sender gets. It is recorded once, and sent at once: a replay
// does not answer again.
func (fc *Durable) Reply(u Received, answer any) error {
	raw, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("cairn: the reply to update %s does not encode: %w", u.ID, err)
	}
	fc.mu.Lock()
	id, recs, err := fc.begin("reply", cairn.OpReply)
	if err == nil && len(recs) == 0 {
		fc.record(client.Operation{Id: id, Kind: string(cairn.OpReply), Status: string(cairn.OpCompleted), Result: raw, Update: &u.ID})
	}
	fc.mu.Unlock()
	if err != nil {
		return err
	}
	return fc.flush(nil)
}
