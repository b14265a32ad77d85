// Package payload stores large values by reference.
//
// A run input, a step output, a state value, an event payload or a
// rendered step input larger than the inline limit is stored as its own
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
// form (cairn.PayloadRef's JSON). A client value that is an object whose
// first key is "$cairn_payload" is itself stored by reference, whatever
// its size, so an inline value is never mistaken for a reference.
//
// Reads check the content's hash against its name: nothing read from the
// bucket is believed that its name does not confirm. Reads are bounded by
// a Budget per render or view.
package payload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// SpillMin is the smallest value Spill stores by reference.
const SpillMin = 1 << 10

// Store reads and writes the payload objects of runs, and keeps recently
// written or read ones (immutable: the key is the content's hash) in a
// cache bounded in bytes, so a join that reads outputs this instance just
// wrote does not read them back.
type Store struct {
	bucket    *blob.Bucket
	keys      keys.Layout
	inlineMax int // values over it go by reference; < 0: none by size
	cacheMax  int
	fifo      *cache.Cache[string, json.RawMessage] // through Peek and Add only: first in, first out
}

// New returns the payload store of bucket: values over inlineMax bytes go
// by reference (none by size when inlineMax < 0); up to cacheBytes of
// payloads are cached (none when cacheBytes <= 0).
func New(bucket *blob.Bucket, k keys.Layout, inlineMax, cacheBytes int) *Store {
	s := &Store{bucket: bucket, keys: k, inlineMax: inlineMax, cacheMax: cacheBytes}
	if cacheBytes > 0 {
		s.fifo = cache.NewWeighted[string](cacheBytes, func(b json.RawMessage) int { return len(b) })
	}
	return s
}

// ByReference reports whether raw must be stored as a payload object.
func (s *Store) ByReference(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	if s.inlineMax >= 0 && len(raw) > s.inlineMax {
		return true
	}
	return LooksLikeRef(raw) // a client value that looks like a reference
}

// LooksLikeRef reports whether raw is a JSON object whose first key is
// "$cairn_payload" (however escaped): such a client value is stored by
// reference, so no inline value can be taken for a reference, byte for
// byte (the Go SDK) or parsed (the TypeScript SDK). Only the first key is
// read.
func LooksLikeRef(raw json.RawMessage) bool {
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

// Externalize stores raw as a payload of run when it must go by
// reference, and returns what the record holds: raw itself, or the
// reference. The payload is written (create-only) before the caller's
// record write.
func (s *Store) Externalize(ctx context.Context, run string, raw json.RawMessage) (json.RawMessage, error) {
	if !s.ByReference(raw) {
		return raw, nil
	}
	return s.Put(ctx, run, raw)
}

// ExternalizeMap externalizes every value of m in place.
func (s *Store) ExternalizeMap(ctx context.Context, run string, m map[string]json.RawMessage) error {
	for k, v := range m {
		ref, err := s.Externalize(ctx, run, v)
		if err != nil {
			return err
		}
		m[k] = ref
	}
	return nil
}

// Put stores raw as a payload of run, whatever its size, and returns its
// reference.
func (s *Store) Put(ctx context.Context, run string, raw json.RawMessage) (json.RawMessage, error) {
	sum := sha256.Sum256(raw)
	ref := cairn.PayloadRef{SHA256: hex.EncodeToString(sum[:]), Bytes: len(raw)}
	_, err := s.bucket.Create(ctx, s.keys.Payload(run, ref.SHA256), raw)
	if err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
		// Already there is fine: the key is the content's hash.
		return nil, errs.Unavailable(err)
	}
	s.put(run, ref.SHA256, raw)
	return ref.JSON(), nil
}

// Spill stores the output's and the patch's inline values of SpillMin
// bytes or more by reference, in place; it reports whether it stored any.
func (s *Store) Spill(ctx context.Context, run string, output *json.RawMessage, patch map[string]json.RawMessage) (bool, error) {
	spilled := false
	spill := func(raw *json.RawMessage) error {
		if _, ok := cairn.AsPayloadRef(*raw); ok || len(*raw) < SpillMin {
			return nil
		}
		ref, err := s.Put(ctx, run, *raw)
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

// Budget bounds the bytes resolved for one render or view. A nil Budget
// has no bound.
type Budget struct {
	mu    sync.Mutex
	limit int
	left  int
}

// NewBudget returns a budget of n bytes.
func NewBudget(n int) *Budget { return &Budget{limit: n, left: n} }

func (b *Budget) take(n int) bool {
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

// TooLargeError: resolving a reference would pass a budget.
// ExternalizeOps stores the results of a function's operations by
// reference where they must be, in place: a result too large for the run
// record is a payload of the run, which the next attempt's worker reads
// like any other. A result over max bytes, or not JSON, is left for the
// history's checks to refuse, naming its field.
func (s *Store) ExternalizeOps(ctx context.Context, run string, ops []cairn.Operation, max int) error {
	for i, op := range ops {
		if len(op.Result) > max || !json.Valid(op.Result) {
			continue
		}
		ref, err := s.Externalize(ctx, run, op.Result)
		if err != nil {
			return err
		}
		ops[i].Result = ref
	}
	return nil
}

// Adopt makes raw, a value of run from (a child's output), readable as a
// value of run to: a reference's payload is copied under to (its name,
// the content's hash, stays, and so does the reference).
func (s *Store) Adopt(ctx context.Context, from, to string, raw json.RawMessage) error {
	ref, ok := cairn.AsPayloadRef(raw)
	if !ok {
		return nil
	}
	b, err := s.Read(ctx, from, ref.SHA256, true)
	if err == nil {
		_, err = s.Put(ctx, to, b)
	}
	return err
}

type TooLargeError struct{ Limit int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("payloads resolved by reference pass the %d-byte limit of one render", e.Limit)
}

// Resolve returns raw, or the bytes it references, within budget.
func (s *Store) Resolve(ctx context.Context, run string, raw json.RawMessage, budget *Budget) (json.RawMessage, error) {
	ref, ok := cairn.AsPayloadRef(raw)
	if !ok {
		return raw, nil
	}
	if !budget.take(ref.Bytes) {
		return nil, &TooLargeError{Limit: budget.limit}
	}
	return s.Read(ctx, run, ref.SHA256, true)
}

// Read reads payload sha of run and checks its hash. cached lets it
// answer from the cache. A payload that does not exist is a
// NotFoundError; one whose hash does not match its name an InternalError.
func (s *Store) Read(ctx context.Context, run, sha string, cached bool) (json.RawMessage, error) {
	if b, ok := s.get(run, sha); ok && cached {
		return b, nil
	}
	o, err := s.bucket.Get(ctx, s.keys.Payload(run, sha))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, &errs.NotFoundError{What: "payload", ID: sha}
	}
	if err != nil {
		return nil, errs.Unavailable(err)
	}
	sum := sha256.Sum256(o.Data)
	if hex.EncodeToString(sum[:]) != sha {
		return nil, &errs.InternalError{Message: fmt.Sprintf("payload %s of run %s is corrupt (its hash does not match its name)", sha, run)}
	}
	s.put(run, sha, o.Data)
	return o.Data, nil
}

// ResolveWithin replaces *raw, when it is a reference that budget still
// has room for, by the bytes it references; any other value, and a
// reference past the budget, stays as it is (clients fetch it from the
// payload endpoint).
func (s *Store) ResolveWithin(ctx context.Context, run string, raw *json.RawMessage, budget *Budget) error {
	ref, ok := cairn.AsPayloadRef(*raw)
	if !ok || !budget.take(ref.Bytes) {
		return nil
	}
	b, err := s.Read(ctx, run, ref.SHA256, true)
	if err != nil {
		return err
	}
	*raw = b
	return nil
}

// ResolveView resolves the references of a run view, in order (input,
// output, state, step outputs), while limit bytes last; the rest stay
// references, which clients fetch from the payload endpoint. multiSink:
// the output is an object of the sinks' outputs, each maybe a reference.
func (s *Store) ResolveView(ctx context.Context, v *cairn.Run, multiSink bool, limit int) error {
	budget := NewBudget(limit)
	one := func(raw *json.RawMessage) error { return s.ResolveWithin(ctx, v.ID, raw, budget) }
	if err := one(&v.Input); err != nil {
		return err
	}
	if multiSink && bytes.Contains(v.Output, cairn.PayloadMarker()) {
		var m map[string]json.RawMessage
		if json.Unmarshal(v.Output, &m) == nil {
			for k, raw := range m {
				if err := one(&raw); err != nil {
					return err
				}
				m[k] = raw
			}
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			v.Output = b
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

// DeleteRun deletes every payload object of run.
func (s *Store) DeleteRun(ctx context.Context, run string) error {
	objs, err := s.bucket.ListAll(ctx, s.keys.PayloadsOf(run))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := s.bucket.Delete(ctx, o.Key); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return err
		}
	}
	if s.fifo != nil {
		p := run + "/"
		s.fifo.DeleteFunc(func(k string, _ json.RawMessage) bool { return strings.HasPrefix(k, p) && len(k) > len(p) })
	}
	return nil
}

func (s *Store) get(run, sha string) (json.RawMessage, bool) {
	if s.fifo == nil {
		return nil, false
	}
	return s.fifo.Peek(run + "/" + sha)
}

func (s *Store) put(run, sha string, b json.RawMessage) {
	if s.fifo == nil || len(b) > s.cacheMax/4 {
		return
	}
	s.fifo.Add(run+"/"+sha, b)
}
