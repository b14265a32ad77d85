package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Large payloads by reference.
//
// A run input, a step output, a state value, an event payload or a
// rendered step input larger than PayloadInlineMax is stored as its own
// object, payloads/<run>/<sha256 of its bytes> (create-only: the same
// content is the same key, so a second write of it is a refused create
// and changes nothing), and the run record, the journal and the lease
// hold a reference in its place:
//
//	{"$cairn_payload":{"sha256":"<64 hex>","bytes":<n>}}
//
// The payload object is written before the run-record write that names
// it, so a reference never dangles; a payload whose record write then
// failed is an orphan under its run's prefix, deleted with the run.
//
// A value is a reference only when its bytes are exactly that canonical
// form (encodeRef's output). A client value that is an object whose first
// key is "$cairn_payload" is itself stored by reference, whatever its
// size, so an inline value is never mistaken for a reference.
//
// Templates resolve the references their expressions name (lazily, only
// those, under a byte budget per render); GET /runs/{run} resolves up to
// ViewResolveBytes and leaves the rest as references, which the SDKs fetch
// from /runs/{run}/payloads/{sha256} (workers: /steps/{lease}/payloads/
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

// payloadRef names a payload object of a run (cairn.PayloadRef).
type payloadRef = cairn.PayloadRef

// payloadMarker starts every reference.
var payloadMarker = string(cairn.PayloadMarker())

func encodeRef(p payloadRef) json.RawMessage { return p.JSON() }

// asRef reports whether raw is a reference, exactly in canonical form.
func asRef(raw json.RawMessage) (payloadRef, bool) { return cairn.AsPayloadRef(raw) }

// IsPayloadRef reports whether raw is a reference to a payload object.
func IsPayloadRef(raw json.RawMessage) bool {
	_, ok := asRef(raw)
	return ok
}

func validSHA(s string) bool { return cairn.ValidSHA256(s) }

// byReference reports whether raw must be stored as a payload object.
func (e *Engine) byReference(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	if max := e.cfg.PayloadInlineMax; max >= 0 && len(raw) > max {
		return true
	}
	return looksLikeRef(raw) // a client value that looks like a reference
}

// looksLikeRef reports whether raw is a JSON object whose first key is
// "$cairn_payload" (however escaped): such a client value is stored by
// reference, so no inline value can be taken for a reference, byte for
// byte (the Go SDK) or parsed (the TypeScript SDK). Only the first key is
// read.
func looksLikeRef(raw json.RawMessage) bool {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil {
		return false
	}
	k, err := d.Token()
	return err == nil && k == "$cairn_payload"
}

// externalize stores raw as a payload of run when it must go by
// reference, and returns what the record holds: raw itself, or the
// reference. The payload is written (create-only) before the caller's
// record write.
func (e *Engine) externalize(ctx context.Context, run string, raw json.RawMessage) (json.RawMessage, error) {
	if !e.byReference(raw) {
		return raw, nil
	}
	return e.store1(ctx, run, raw)
}

// externalizeMap externalizes every value of m in place.
func (e *Engine) externalizeMap(ctx context.Context, run string, m map[string]json.RawMessage) error {
	for k, v := range m {
		if !e.byReference(v) {
			continue
		}
		ref, err := e.externalize(ctx, run, v)
		if err != nil {
			return err
		}
		m[k] = ref
	}
	return nil
}

// payloadBudget bounds the bytes resolved for one render or view.
type payloadBudget struct {
	mu    sync.Mutex
	limit int
	left  int
}

func newBudget(n int) *payloadBudget { return &payloadBudget{limit: n, left: n} }

func (b *payloadBudget) take(n int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// PayloadTooLargeError: resolving a reference would pass a budget.
type PayloadTooLargeError struct{ Limit int }

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("payloads resolved by reference pass the %d-byte limit of one render", e.Limit)
}

// resolve returns raw, or the bytes it references. The payload's hash is
// checked: nothing read from the bucket is believed that its name does
// not confirm.
func (e *Engine) resolve(ctx context.Context, run string, raw json.RawMessage, budget *payloadBudget) (json.RawMessage, error) {
	ref, ok := asRef(raw)
	if !ok {
		return raw, nil
	}
	if !budget.take(ref.Bytes) {
		return nil, &PayloadTooLargeError{Limit: budget.limit}
	}
	return e.readPayload(ctx, run, ref.SHA256, true)
}

// readPayload reads payload sha of run and checks its hash.
// cached lets it answer from this instance's cache of payloads.
func (e *Engine) readPayload(ctx context.Context, run, sha string, cached bool) (json.RawMessage, error) {
	if b, ok := e.payloads.get(run, sha); ok && cached {
		return b, nil
	}
	o, err := e.store.Get(ctx, e.keys.Payload(run, sha))
	if isNotFound(err) {
		return nil, &NotFoundError{What: "payload", ID: sha}
	}
	if err != nil {
		return nil, unavailable(err)
	}
	sum := sha256.Sum256(o.Data)
	if hex.EncodeToString(sum[:]) != sha {
		return nil, &InternalError{Message: fmt.Sprintf("payload %s of run %s is corrupt (its hash does not match its name)", sha, run)}
	}
	e.payloads.put(run, sha, o.Data)
	return o.Data, nil
}

// Payload returns payload sha of run (GET /runs/{run}/payloads/{sha256}).
func (e *Engine) Payload(ctx context.Context, run, sha string) (json.RawMessage, error) {
	if err := keys.RunID.Check("run", run); err != nil {
		return nil, err
	}
	if !validSHA(sha) {
		return nil, &InvalidError{Field: "sha256", Message: "must be 64 lowercase hex digits"}
	}
	return e.readPayload(ctx, run, sha, false)
}

// LeasePayload returns payload sha of the run a lease is of, for its
// worker (GET /steps/{lease}/payloads/{sha256}): the lease proves the
// worker was handed that run's data. A lease that ended still proves it.
func (e *Engine) LeasePayload(ctx context.Context, lease, sha string) (json.RawMessage, error) {
	if !validSHA(sha) {
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
	return e.readPayload(ctx, tok.Run, sha, true)
}

// deletePayloads deletes every payload object of run.
func (e *Engine) deletePayloads(ctx context.Context, run string) error {
	objs, err := e.store.ListAll(ctx, e.keys.PayloadsOf(run))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := e.store.Delete(ctx, o.Key); err != nil && !isNotFound(err) {
			return err
		}
	}
	e.payloads.dropRun(run)
	return nil
}

// checkPayload refuses a payload over MaxOutputBytes, naming field.
func (e *Engine) checkPayload(field string, raw json.RawMessage) error {
	if len(raw) > e.cfg.MaxOutputBytes {
		return cairn.ValidationError{{Field: field, Message: fmt.Sprintf("%d bytes, over the %d-byte limit of one payload", len(raw), e.cfg.MaxOutputBytes)}}
	}
	return nil
}

// resolveView resolves the references of a run view, in order (input,
// output, state, step outputs), while ViewResolveBytes lasts; the rest
// stay references, which clients fetch from the payload endpoint.
func (e *Engine) resolveView(ctx context.Context, v *cairn.Run, multiSink bool) error {
	budget := newBudget(e.cfg.ViewResolveBytes)
	one := func(raw *json.RawMessage) error {
		ref, ok := asRef(*raw)
		if !ok || !budget.take(ref.Bytes) {
			return nil
		}
		b, err := e.readPayload(ctx, v.ID, ref.SHA256, true)
		if err != nil {
			return err
		}
		*raw = b
		return nil
	}
	if err := one(&v.Input); err != nil {
		return err
	}
	if multiSink && bytes.Contains(v.Output, []byte(payloadMarker)) {
		var m map[string]json.RawMessage
		if json.Unmarshal(v.Output, &m) == nil {
			for k, raw := range m {
				if err := one(&raw); err != nil {
					return err
				}
				m[k] = raw
			}
			v.Output = mustJSON(m)
		}
	} else if err := one(&v.Output); err != nil {
		return err
	}
	if len(v.State) > 0 {
		state := make(map[string]json.RawMessage, len(v.State))
		for k, raw := range v.State {
			if err := one(&raw); err != nil {
				return err
			}
			state[k] = raw
		}
		v.State = state // the record's map is not changed
	}
	for i := range v.Steps {
		if err := one(&v.Steps[i].Output); err != nil {
			return err
		}
	}
	return nil
}

// payloadCache keeps recently written or read payloads (immutable: the
// key is the content's hash), bounded in bytes, so a join that reads
// outputs this instance just wrote does not read them back.
type payloadCache struct {
	max  int
	fifo *cache.Cache[string, json.RawMessage] // through Peek and Add only: first in, first out
}

func newPayloadCache(max int) *payloadCache {
	return &payloadCache{max: max, fifo: cache.NewWeighted[string](max, func(b json.RawMessage) int { return len(b) })}
}

func (c *payloadCache) get(run, sha string) (json.RawMessage, bool) {
	if c == nil || c.max <= 0 {
		return nil, false
	}
	return c.fifo.Peek(run + "/" + sha)
}

func (c *payloadCache) put(run, sha string, b json.RawMessage) {
	if c == nil || c.max <= 0 || len(b) > c.max/4 {
		return
	}
	c.fifo.Add(run+"/"+sha, b)
}

func (c *payloadCache) dropRun(run string) {
	if c == nil {
		return
	}
	p := run + "/"
	c.fifo.DeleteFunc(func(k string, _ json.RawMessage) bool { return len(k) > len(p) && k[:len(p)] == p })
}

// payloadCtx bounds payload reads made inside a run mutation (a when
// condition that names an output by reference).
func payloadCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// externalizeEnd stores a complete's output and a complete's or fail's
// state values by reference where they must be, in place.
func (e *Engine) externalizeEnd(ctx context.Context, run string, output *json.RawMessage, patch map[string]json.RawMessage) error {
	if output != nil {
		ref, err := e.externalize(ctx, run, *output)
		if err != nil {
			return err
		}
		*output = ref
	}
	return e.externalizeMap(ctx, run, patch)
}

// externalizeStart stores a new run's input and state values by
// reference where they must be (under the new run's id, before its
// record is created), checking each against the per-payload limit.
func (e *Engine) externalizeStart(ctx context.Context, r *runRecord) error {
	for k, v := range r.State {
		if len(v) == 0 || !json.Valid(v) {
			return cairn.ValidationError{{Field: "state." + k, Message: "not valid JSON"}}
		}
		if err := e.checkPayload("state."+k, v); err != nil {
			return err
		}
	}
	in, err := e.externalize(ctx, r.ID, r.Input)
	if err != nil {
		return err
	}
	r.Input = in
	if err := e.externalizeMap(ctx, r.ID, r.State); err != nil {
		return err
	}
	for _, st := range r.Steps { // a rerun's reused outputs
		if out, err := e.externalize(ctx, r.ID, st.Output); err != nil {
			return err
		} else {
			st.Output = out
		}
	}
	return nil
}

// resolveRecord replaces the references of r's input, state and the
// outputs of its completed steps (but those in skip) by their values, for
// a rerun that copies them into a new run.
func (e *Engine) resolveRecord(ctx context.Context, r *runRecord, skip map[string]bool) error {
	var err error
	if r.Input, err = e.resolve(ctx, r.ID, r.Input, nil); err != nil {
		return err
	}
	for k, v := range r.State {
		if r.State[k], err = e.resolve(ctx, r.ID, v, nil); err != nil {
			return err
		}
	}
	for id, st := range r.Steps {
		if st.Status != cairn.StepCompleted || skip[id] {
			continue
		}
		if st.Output, err = e.resolve(ctx, r.ID, st.Output, nil); err != nil {
			return err
		}
	}
	return nil
}

// spillMin is the smallest value a complete or fail stores by reference
// below PayloadInlineMax, when the run record is large (spillValues).
const spillMin = 1 << 10

// mutateSpilling applies a complete's or fail's mutation, keeping the run
// record small: when this instance's copy of the record is already over a
// quarter of MaxRunRecordBytes, the output's and the patch's inline values
// of spillMin bytes or more go by reference first; and when the mutation
// is refused as too_large anyway (another instance grew the record), they
// go by reference and it is applied once more. So a wide fan-out of
// outputs under the inline limit (200 of 50 KB: 10 MB) completes with a
// record of about 2 MiB. The refusal costs no request: the committer
// measures the record before it writes.
func (e *Engine) mutateSpilling(ctx context.Context, run string, output *json.RawMessage, patch map[string]json.RawMessage, m mutationOf[*Ended]) (*Ended, error) {
	if e.cfg.PayloadInlineMax < 0 {
		return mutate(ctx, e.commits, run, m)
	}
	if data, _, ok := e.commits.cache.get(run); ok && len(data) > e.cfg.MaxRunRecordBytes/4 {
		if _, err := e.spillValues(ctx, run, output, patch); err != nil {
			return nil, err
		}
	}
	ended, err := mutate(ctx, e.commits, run, m)
	if reason, ok := IsRejection(err); !ok || reason != cairn.ReasonTooLarge {
		return ended, err
	}
	spilled, serr := e.spillValues(ctx, run, output, patch)
	if serr != nil {
		return nil, serr
	}
	if !spilled {
		return ended, err
	}
	return mutate(ctx, e.commits, run, m)
}

// spillValues stores the output's and the patch's inline values of
// spillMin bytes or more by reference, in place; it reports whether it
// stored any.
func (e *Engine) spillValues(ctx context.Context, run string, output *json.RawMessage, patch map[string]json.RawMessage) (bool, error) {
	spilled := false
	spill := func(raw *json.RawMessage) error {
		if len(*raw) < spillMin || IsPayloadRef(*raw) {
			return nil
		}
		ref, err := e.store1(ctx, run, *raw)
		if err != nil {
			return err
		}
		*raw, spilled = ref, true
		return nil
	}
	if output != nil {
		if err := spill(output); err != nil {
			return false, err
		}
	}
	for k, v := range patch {
		if err := spill(&v); err != nil {
			return false, err
		}
		patch[k] = v
	}
	return spilled, nil
}

// store1 stores raw as a payload of run, whatever its size.
func (e *Engine) store1(ctx context.Context, run string, raw json.RawMessage) (json.RawMessage, error) {
	sum := sha256.Sum256(raw)
	ref := payloadRef{SHA256: hex.EncodeToString(sum[:]), Bytes: len(raw)}
	_, err := e.store.Create(ctx, e.keys.Payload(run, ref.SHA256), raw)
	if err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
		// Already there is fine: the key is the content's hash.
		return nil, unavailable(err)
	}
	e.payloads.put(run, ref.SHA256, raw)
	return encodeRef(ref), nil
}
