package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
	"github.com/cairn-dev/cairn/sdk/codec"
)

// Client-side encryption (package sdk/codec, docs/SDK.md). A client or
// worker given a keyring encrypts the payloads it writes — each top-level
// value of a run input that is an object (the whole input otherwise) and
// of a run's state, step outputs, event payloads, a durable function's
// operation results and the inputs of the runs it invokes — and decodes
// every encrypted value in what it reads. Keys an encrypted workflow
// lists in clear (WorkflowDef.Encrypted) stay in the clear, so its
// templates can read inside them. The server and its bucket hold only
// ciphertext; a value too large to send inline is encrypted before the
// server stores it by reference.

// ClassCodec is the class of a step failed because a value it reads does
// not decrypt: its key is not in the worker's keyring, or the value was
// changed. The error names the key id.
const ClassCodec = "codec"

// WithCodec makes the client encrypt the payloads it sends (run inputs
// and state at start, event payloads, schedule inputs) with keyring k and
// decode the encrypted values in the runs, journals and inputs it reads.
// A Worker over this client does the same for its steps.
func WithCodec(k *codec.Keyring) ClientOption { return func(c *Client) { c.codec = k } }

// WithWorkerCodec gives the worker its own keyring [its client's].
func WithWorkerCodec(k *codec.Keyring) WorkerOption { return func(c *workerConfig) { c.codec = k } }

// Codec returns the client's keyring, nil without one.
func (c *Client) Codec() *codec.Keyring { return c.codec }

func (w *Worker) keyring() *codec.Keyring {
	if w.cfg.codec != nil {
		return w.cfg.codec
	}
	return w.c.codec
}

// sealValue encrypts v whole (nil, or no keyring: v as it is).
func sealValue(k *codec.Keyring, v json.RawMessage) (json.RawMessage, error) {
	if k == nil || len(v) == 0 {
		return v, nil
	}
	return k.Encrypt(v)
}

// sealTop encrypts each top-level value of v when it is an object, but
// those of the keys in clear, and v whole otherwise.
func sealTop(k *codec.Keyring, v json.RawMessage, clear map[string]bool) (json.RawMessage, error) {
	if k == nil || len(v) == 0 {
		return v, nil
	}
	if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' || codec.IsEncrypted(t) {
		return k.Encrypt(v)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, err
	}
	m, err := sealMap(k, m, clear)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// sealMap returns m with its values encrypted, but those of the keys in
// clear (a state patch, initial state).
func sealMap(k *codec.Keyring, m map[string]json.RawMessage, clear map[string]bool) (map[string]json.RawMessage, error) {
	if k == nil || len(m) == 0 {
		return m, nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for key, v := range m {
		if clear[key] {
			out[key] = v
			continue
		}
		e, err := k.Encrypt(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out[key] = e
	}
	return out, nil
}

// openValue replaces the encrypted values in *v by their plaintexts.
func openValue(k *codec.Keyring, v *json.RawMessage) error {
	if k == nil || len(*v) == 0 {
		return nil
	}
	d, err := k.DecodeDeep(*v)
	if err != nil {
		return err
	}
	*v = d
	return nil
}

// openMap decodes each value of m in place.
func openMap(k *codec.Keyring, m map[string]json.RawMessage) error {
	for key, v := range m {
		if err := openValue(k, &v); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		m[key] = v
	}
	return nil
}

// codecError is a read that did not decode, as the SDK reports it.
func codecError(what string, err error) error {
	return fmt.Errorf("cairn: decrypting %s: %w", what, err)
}

// openRun decodes a run view: input, state, output, step outputs and
// function histories.
func (c *Client) openRun(r *cairn.Run) error {
	k := c.codec
	if k == nil || r == nil {
		return nil
	}
	if err := openValue(k, &r.Input); err != nil {
		return codecError("the run input", err)
	}
	if err := openValue(k, &r.Output); err != nil {
		return codecError("the run output", err)
	}
	if err := openMap(k, r.State); err != nil {
		return codecError("the run state", err)
	}
	for i := range r.Steps {
		s := &r.Steps[i]
		if err := openValue(k, &s.Output); err != nil {
			return codecError("the output of step "+s.ID, err)
		}
		for j := range s.Operations {
			if err := openValue(k, &s.Operations[j].Result); err != nil {
				return codecError("the result of operation "+s.Operations[j].ID, err)
			}
		}
	}
	return nil
}

// clearCache holds the clear keys of the workflow versions this client
// started runs of.
type clearCache struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

// clearKeys returns the keys workflow@version leaves in the clear (from
// its definition, read once per version; version "" reads the latest
// each time).
func (c *Client) clearKeys(ctx context.Context, workflow, version string) (map[string]bool, error) {
	key := workflow + "@" + version
	if version != "" {
		c.clear.mu.Lock()
		m, ok := c.clear.m[key]
		c.clear.mu.Unlock()
		if ok {
			return m, nil
		}
	}
	def, err := c.Workflow(ctx, workflow, version)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == 404 {
			return nil, nil // Start says so
		}
		return nil, fmt.Errorf("cairn: reading the definition of %s for its clear keys: %w", workflow, err)
	}
	m := clearSet(*def)
	c.clear.mu.Lock()
	if c.clear.m == nil {
		c.clear.m = map[string]map[string]bool{}
	}
	c.clear.m[workflow+"@"+def.Version] = m
	c.clear.mu.Unlock()
	return m, nil
}

func clearSet(w cairn.Workflow) map[string]bool {
	m := make(map[string]bool, len(w.Clear))
	for _, k := range w.Clear {
		m[k] = true
	}
	return m
}

// sealStart encrypts a start request's input and state.
func (c *Client) sealStart(ctx context.Context, workflow, version string, req *client.StartRequest) error {
	if c.codec == nil || len(req.Input) == 0 && req.State == nil {
		return nil
	}
	clear, err := c.clearKeys(ctx, workflow, version)
	if err != nil {
		return err
	}
	if req.Input, err = sealTop(c.codec, req.Input, clear); err != nil {
		return fmt.Errorf("cairn: encrypting the run input: %w", err)
	}
	if req.State != nil {
		st, err := sealMap(c.codec, *req.State, clear)
		if err != nil {
			return fmt.Errorf("cairn: encrypting the run state: %w", err)
		}
		req.State = &st
	}
	return nil
}

// clearOf returns the clear keys of a workflow this worker serves
// (version "": the one registered version of that name, if only one).
func (w *Worker) clearOf(workflow, version string) map[string]bool {
	var found *WorkflowDef
	for _, d := range w.defs {
		if d.wf.Name != workflow {
			continue
		}
		if d.wf.Version == version {
			return clearSet(d.wf)
		}
		if version == "" {
			if found != nil {
				return nil
			}
			found = d
		}
	}
	if found != nil {
		return clearSet(found.wf)
	}
	return nil
}

// sealOutcome encrypts what an attempt reports: its output (nil: none)
// and the values of its state patch, but the workflow's clear keys.
func (w *Worker) sealOutcome(l client.Lease, output json.RawMessage, patch map[string]json.RawMessage) (json.RawMessage, map[string]json.RawMessage, error) {
	k := w.keyring()
	if k == nil {
		return output, patch, nil
	}
	out, err := sealValue(k, output)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypting the output: %w", err)
	}
	p, err := sealMap(k, patch, w.clearOf(l.Workflow, l.Version))
	if err != nil {
		return nil, nil, fmt.Errorf("encrypting the state patch: %w", err)
	}
	return out, p, nil
}

// openLease decodes what a step reads, in place: its input, the earlier
// outputs and the state (values still stored by reference are decoded
// once read: stepCtx.resolved).
func (s *stepCtx) openInput() error {
	k := s.worker.keyring()
	if k == nil || isRef(s.input) {
		return nil
	}
	if err := openValue(k, &s.input); err != nil {
		return Failure(ClassCodec, codecError("the step's input", err))
	}
	return nil
}

// openStored decodes a value of the step's outputs or state.
func (s *stepCtx) openStored(raw json.RawMessage) (json.RawMessage, error) {
	if s.worker == nil {
		return raw, nil
	}
	k := s.worker.keyring()
	if k == nil || isRef(raw) {
		return raw, nil
	}
	if err := openValue(k, &raw); err != nil {
		return nil, Failure(ClassCodec, err)
	}
	return raw, nil
}

// sealOps encrypts the results of a function's operations before they
// are checkpointed, and an invoked run's input (top-level values, but the
// clear keys of the child workflow when this worker serves it).
func (fc *Durable) sealCheckpoint(req client.CheckpointRequest) (client.CheckpointRequest, error) {
	k := fc.sc.worker.keyring()
	if k == nil {
		return req, nil
	}
	ops := make([]client.Operation, len(req.Operations))
	for i, op := range req.Operations {
		r, err := sealValue(k, op.Result)
		if err != nil {
			return req, fmt.Errorf("encrypting the result of %s: %w", op.Id, err)
		}
		op.Result = r
		ops[i] = op
	}
	req.Operations = ops
	if sp := req.Suspend; sp != nil && sp.Invoke != nil && len(sp.Invoke.Input) > 0 {
		inv := *sp.Invoke
		in, err := sealTop(k, inv.Input, fc.sc.worker.clearOf(inv.Workflow, deref(inv.Version)))
		if err != nil {
			return req, fmt.Errorf("encrypting the input of the invoked run: %w", err)
		}
		inv.Input = in
		s := *sp
		s.Invoke = &inv
		req.Suspend = &s
	}
	return req, nil
}

// openHistory decodes the results of a function's recorded operations
// (those stored by reference when read: Durable.resolve).
func openHistory(k *codec.Keyring, hist []client.Operation) error {
	if k == nil {
		return nil
	}
	for i := range hist {
		if isRef(hist[i].Result) {
			continue
		}
		if err := openValue(k, &hist[i].Result); err != nil {
			return Failure(ClassCodec, codecError("the recorded result of "+hist[i].Id, err))
		}
	}
	return nil
}
