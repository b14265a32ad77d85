package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
)

// Payloads by reference: a value larger than the server's inline limit
// reaches clients as a reference, {"$cairn_payload":{"sha256":…,"bytes":…}}
// (cairn.PayloadRef). The client resolves the references of every run it
// returns, and a worker those of its step's input, outputs and state, so
// code using the SDK never sees one.

// payloadParallel bounds the payload reads of one resolution.
const payloadParallel = 8

// fetchPayload reads a payload from one of the two payload routes and
// checks it is the value its reference names (its length: the server
// checked the hash).
func (c *Client) fetchPayload(ref cairn.PayloadRef, get func() (*http.Response, error)) (json.RawMessage, error) {
	resp, err := get()
	if err != nil {
		return nil, c.transport(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(ref.Bytes)+1))
	if err != nil {
		return nil, c.transport(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, problemOf(resp.StatusCode, b)
	}
	if len(b) != ref.Bytes {
		return nil, unexpected(resp.StatusCode, fmt.Sprintf("payload %s is %d bytes, its reference says %d", ref.SHA256, len(b), ref.Bytes))
	}
	return b, nil
}

// RunPayload returns the value a reference of run names.
func (c *Client) RunPayload(ctx context.Context, run string, ref cairn.PayloadRef) (json.RawMessage, error) {
	return c.fetchPayload(ref, func() (*http.Response, error) { return c.api.GetRunPayload(ctx, run, ref.SHA256) })
}

// leasePayload returns the value a reference of a lease's run names.
func (c *Client) leasePayload(ctx context.Context, lease string, ref cairn.PayloadRef) (json.RawMessage, error) {
	return c.fetchPayload(ref, func() (*http.Response, error) { return c.api.GetLeasePayload(ctx, lease, ref.SHA256) })
}

// resolveAll replaces each value of vals that is a reference by what get
// returns for it, payloadParallel at a time.
func resolveAll(vals []*json.RawMessage, get func(cairn.PayloadRef) (json.RawMessage, error)) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		sem  = make(chan struct{}, payloadParallel)
	)
	for _, v := range vals {
		ref, ok := cairn.AsPayloadRef(*v)
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b, err := get(ref)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ferr == nil {
					ferr = err
				}
				return
			}
			*v = b
		}()
	}
	wg.Wait()
	return ferr
}

// resolveRun replaces the references in a run view (input, output, state,
// step outputs) by their values.
func (c *Client) resolveRun(ctx context.Context, r *cairn.Run) error {
	if r == nil {
		return nil
	}
	vals := []*json.RawMessage{&r.Input}
	var sinks map[string]*json.RawMessage // several sinks: an object of outputs
	if bytes.Contains(r.Output, cairn.PayloadMarker()) {
		if _, ok := cairn.AsPayloadRef(r.Output); ok {
			vals = append(vals, &r.Output)
		} else {
			var m map[string]json.RawMessage
			if json.Unmarshal(r.Output, &m) == nil {
				sinks = map[string]*json.RawMessage{}
				for k, v := range m {
					sinks[k] = &v
					vals = append(vals, &v)
				}
			}
		}
	}
	state := make(map[string]*json.RawMessage, len(r.State))
	for k, v := range r.State {
		state[k] = &v
		vals = append(vals, &v)
	}
	for i := range r.Steps {
		vals = append(vals, &r.Steps[i].Output)
	}
	if err := resolveAll(vals, func(ref cairn.PayloadRef) (json.RawMessage, error) { return c.RunPayload(ctx, r.ID, ref) }); err != nil {
		return err
	}
	if len(state) > 0 {
		r.State = make(map[string]json.RawMessage, len(state))
		for k, v := range state {
			r.State[k] = *v
		}
	}
	if sinks != nil {
		m := make(map[string]json.RawMessage, len(sinks))
		for k, v := range sinks {
			m[k] = *v
		}
		out, err := json.Marshal(m)
		if err != nil {
			return err
		}
		r.Output = out
	}
	return nil
}

// resolveLease replaces the references in a step's input, outputs and
// state by their values, read through the lease.
func (c *Client) resolveLease(ctx context.Context, lease string, input *json.RawMessage, outputs, state map[string]json.RawMessage) error {
	vals := []*json.RawMessage{input}
	ptrs := map[*json.RawMessage]func(json.RawMessage){}
	for _, m := range []map[string]json.RawMessage{outputs, state} {
		for k, v := range m {
			if _, ok := cairn.AsPayloadRef(v); !ok {
				continue
			}
			p := &v
			vals = append(vals, p)
			ptrs[p] = func(b json.RawMessage) { m[k] = b }
		}
	}
	if err := resolveAll(vals, func(ref cairn.PayloadRef) (json.RawMessage, error) { return c.leasePayload(ctx, lease, ref) }); err != nil {
		return err
	}
	for p, set := range ptrs {
		set(*p)
	}
	return nil
}

func isRef(raw json.RawMessage) bool {
	_, ok := cairn.AsPayloadRef(raw)
	return ok
}

// leasePayloads is a step's payload reader: through its lease.
func (w *Worker) leasePayloads(lease string) func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		ref, ok := cairn.AsPayloadRef(raw)
		if !ok {
			return raw, nil
		}
		return w.c.leasePayload(ctx, lease, ref)
	}
}

// resolveInput reads the step's input when it is stored by reference,
// before the body runs. A read that fails fails the attempt as retryable.
func (s *stepCtx) resolveInput() error {
	if s.payload == nil || !isRef(s.input) {
		return s.openInput() // codec.go
	}
	b, err := s.payload(s, s.input)
	if err != nil {
		return Retryable(fmt.Errorf("reading the step's input (stored by reference): %w", err))
	}
	s.input = b
	return s.openInput()
}

// prefetchInput reads a lease's input stored by reference, trying a few
// times, before the worker says started; a read that still fails leaves
// the reference, and resolveInput tries once more and fails the attempt
// as retryable.
func (w *Worker) prefetchInput(ctx context.Context, lease string, raw json.RawMessage, log interface{ Warn(string, ...any) }) json.RawMessage {
	if !isRef(raw) {
		return raw
	}
	b := backoff{min: 100 * time.Millisecond, max: time.Second}
	for try := 0; ; try++ {
		v, err := w.leasePayloads(lease)(ctx, raw)
		if err == nil {
			return v
		}
		if try == 3 || !b.sleep(ctx) {
			log.Warn("reading the step's input (stored by reference) failed", "err", err)
			return raw
		}
	}
}
