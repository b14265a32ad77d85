package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

type (
	// StoreEntry is a key's value in the long-term store and its version.
	StoreEntry = cairn.StoreEntry
	// StoreKeyInfo is a key in a listing: its version and size.
	StoreKeyInfo = cairn.StoreKeyInfo
)

// Store is one namespace of the long-term store: a key-value store, kept
// in the engine's bucket, for data that outlives runs (per-user memory,
// learned facts). Needs a key with the store scope. Writes are not part of
// a run's history: a retried step writes again, so write values derived
// from the step, or use Update, which writes over the version it read.
// With a keyring (WithCodec) values are encrypted whole.
type Store struct {
	c  *Client
	ns string
}

// Store returns a namespace of the long-term store.
func (c *Client) Store(namespace string) *Store { return &Store{c: c, ns: namespace} }

// StepStore returns a namespace of the long-term store through the client
// of the worker running the step ctx belongs to; false outside a step.
func StepStore(ctx context.Context, namespace string) (*Store, bool) {
	s, ok := ctx.Value(stepCtxKey{}).(*stepCtx)
	if !ok || s.worker == nil {
		return nil, false
	}
	return s.worker.c.Store(namespace), true
}

// StoreCondition makes a write conditional: IfVersion writes only over
// that version of the value, IfAbsent only where there is none. Another
// value is a 409 (IsConflict) and nothing is written.
type StoreCondition struct {
	IfVersion string
	IfAbsent  bool
}

// Get returns key's value (decrypted); an error for which IsNotFound
// holds when it has none.
func (s *Store) Get(ctx context.Context, key string) (*StoreEntry, error) {
	e, err := decodeView[StoreEntry](s.c)(s.c.api.GetStoreValue(ctx, s.ns, key))
	if err != nil {
		return nil, err
	}
	if err := openValue(s.c.codec, &e.Value); err != nil {
		return nil, fmt.Errorf("cairn: decrypting store key %s/%s: %w", s.ns, key, err)
	}
	return e, nil
}

// Put writes value (anything JSON-encodable) at key, under cond. The
// entry it returns holds the new version, not the value.
func (s *Store) Put(ctx context.Context, key string, value any, cond StoreCondition) (*StoreEntry, error) {
	raw, err := toJSON(value)
	if err != nil {
		return nil, err
	}
	if raw, err = sealValue(s.c.codec, raw); err != nil {
		return nil, fmt.Errorf("cairn: encrypting store key %s/%s: %w", s.ns, key, err)
	}
	req := client.StorePutRequest{Value: raw, IfVersion: ptr(cond.IfVersion), IfAbsent: ptr(cond.IfAbsent)}
	return decodeView[StoreEntry](s.c)(s.c.api.PutStoreValue(ctx, s.ns, key, req))
}

// Update reads key, calls fn with its value (nil when it has none) and
// writes what fn returns over the version it read, again from the read
// when another writer came first: no concurrent update is lost. fn may
// run several times.
func (s *Store) Update(ctx context.Context, key string, fn func(old json.RawMessage) (any, error)) (*StoreEntry, error) {
	for {
		var old json.RawMessage
		cond := StoreCondition{IfAbsent: true}
		e, err := s.Get(ctx, key)
		switch {
		case err == nil:
			old, cond = e.Value, StoreCondition{IfVersion: e.Version}
		case !IsNotFound(err):
			return nil, err
		}
		v, err := fn(old)
		if err != nil {
			return nil, err
		}
		e, err = s.Put(ctx, key, v, cond)
		if err == nil || !IsConflict(err) {
			return e, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Delete removes key's value; with ifVersion only that version (another
// value, or none, is a 409). Deleting a key with no value is no error.
func (s *Store) Delete(ctx context.Context, key, ifVersion string) error {
	resp, err := s.c.api.DeleteStoreValueWithResponse(ctx, s.ns, key, &client.DeleteStoreValueParams{IfVersion: ptr(ifVersion)})
	return s.c.check(err, resp)
}

// Keys iterates over the namespace's keys that start with prefix, in key
// order, a page at a time.
func (s *Store) Keys(ctx context.Context, prefix string) iter.Seq2[StoreKeyInfo, error] {
	return paged("", func(cursor string) ([]StoreKeyInfo, string, error) {
		p := &client.ListStoreKeysParams{Prefix: ptr(prefix), Cursor: ptr(cursor)}
		page, err := decodeView[cairn.StorePage](s.c)(s.c.api.ListStoreKeys(ctx, s.ns, p))
		if err != nil {
			return nil, "", err
		}
		return page.Keys, page.NextCursor, nil
	})
}
