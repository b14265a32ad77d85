// Package kv is the long-term store: a key-value store for application
// data that outlives runs, kept in the bucket at kv/<namespace>/<key>.
//
// Every call is one request to the bucket, except a write with if_absent
// over a deleted key (below): a read is a GET, a write a PUT (conditional
// with if_version or if_absent), a delete a DELETE, a listing page a LIST.
// A value is at most one payload (Config.MaxOutputBytes).
//
// Deleting with if_version cannot use a conditional delete (not every
// store has one), so it writes an empty object over that version — a
// tombstone — that reads, listings and if_absent treat as no value. An
// unconditional delete removes the object.
package kv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Store reads and writes the long-term store of one bucket.
type Store struct {
	b        *blob.Bucket
	prefix   string
	maxValue int
	now      func() time.Time
}

// New returns the store kept in b under prefix, whose values are at most
// maxValue bytes.
func New(b *blob.Bucket, prefix string, maxValue int, now func() time.Time) *Store {
	return &Store{b: b, prefix: prefix + "kv/", maxValue: maxValue, now: now}
}

var (
	namespaceRule = keys.NewRule(cairn.StoreNamespacePattern, cairn.MaxStoreNamespaceLen)
	keyRule       = keys.NewRule(cairn.StoreKeyPattern, cairn.MaxStoreKeyLen)
)

// Listing pages: the default and the largest; the largest value.
const (
	MaxValue    = 1 << 20
	DefaultPage = 100
	MaxPage     = 1000
)

func (s *Store) object(ns, key string) (string, error) {
	if err := namespaceRule.Check("namespace", ns); err != nil {
		return "", err
	}
	if err := keyRule.Check("key", key); err != nil {
		return "", err
	}
	return s.prefix + ns + "/" + key, nil
}

// Get returns a key's value; NotFoundError when it has none.
func (s *Store) Get(ctx context.Context, ns, key string) (*cairn.StoreEntry, error) {
	obj, err := s.object(ns, key)
	if err != nil {
		return nil, err
	}
	o, err := s.b.Get(ctx, obj)
	if errors.Is(err, blob.ErrNotFound) || err == nil && len(o.Data) == 0 {
		return nil, &errs.NotFoundError{What: "store key", ID: ns + "/" + key}
	}
	if err != nil {
		return nil, errs.Unavailable(err)
	}
	return &cairn.StoreEntry{Namespace: ns, Key: key, Value: o.Data, Version: encodeVersion(o.Version), UpdatedAt: o.ModTime.UTC()}, nil
}

// Put writes a key's value, over the version req.IfVersion names or where
// there is none (req.IfAbsent) when they are set: any other value is a
// ConflictError, and nothing is written.
func (s *Store) Put(ctx context.Context, ns, key string, req cairn.StorePutRequest) (*cairn.StoreEntry, error) {
	obj, err := s.object(ns, key)
	if err != nil {
		return nil, err
	}
	value, opts, err := s.checkPut(req)
	if err != nil {
		return nil, err
	}
	v, err := s.b.Put(ctx, obj, value, opts)
	if opts.IfNotExist && errors.Is(err, blob.ErrPreconditionFailed) {
		v, err = s.overTombstone(ctx, obj, value)
	}
	if err != nil {
		return nil, s.writeErr(ns, key, err)
	}
	return &cairn.StoreEntry{Namespace: ns, Key: key, Version: encodeVersion(v), UpdatedAt: s.now().UTC()}, nil
}

// checkPut validates a write and returns the value to store (compacted)
// and its conditions.
func (s *Store) checkPut(req cairn.StorePutRequest) ([]byte, blob.WriteOptions, error) {
	opts := blob.WriteOptions{ContentType: "application/json", IfNotExist: req.IfAbsent}
	var buf bytes.Buffer
	switch {
	case len(req.Value) == 0:
		return nil, opts, cairn.ValidationError{{Field: "value", Message: "required"}}
	case json.Compact(&buf, req.Value) != nil:
		return nil, opts, cairn.ValidationError{{Field: "value", Message: "not JSON"}}
	case buf.Len() > s.maxValue:
		return nil, opts, cairn.ValidationError{{Field: "value", Message: fmt.Sprintf("%d bytes, over the %d-byte limit of a value", buf.Len(), s.maxValue)}}
	case req.IfAbsent && req.IfVersion != "":
		return nil, opts, cairn.ValidationError{{Field: "if_absent", Message: "cannot be combined with if_version"}}
	}
	if req.IfVersion != "" {
		v, err := decodeVersion("if_version", req.IfVersion)
		if err != nil {
			return nil, opts, err
		}
		opts.IfMatch = v
	}
	return buf.Bytes(), opts, nil
}

// overTombstone writes value where an if_absent write found an object:
// over it when it is a tombstone.
func (s *Store) overTombstone(ctx context.Context, obj string, value []byte) (blob.Version, error) {
	a, err := s.b.Stat(ctx, obj)
	if errors.Is(err, blob.ErrNotFound) { // deleted since: try once more
		return s.b.Put(ctx, obj, value, blob.WriteOptions{ContentType: "application/json", IfNotExist: true})
	}
	if err != nil {
		return "", err
	}
	if a.Size != 0 {
		return "", blob.ErrPreconditionFailed
	}
	return s.b.Put(ctx, obj, value, blob.WriteOptions{ContentType: "application/json", IfMatch: a.Version})
}

func (s *Store) writeErr(ns, key string, err error) error {
	if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
		return &errs.ConflictError{Message: fmt.Sprintf("store key %s/%s: its value is not the one the write's condition names (if_version or if_absent)", ns, key)}
	}
	return errs.Unavailable(err)
}

// Delete removes a key's value: only that version when ifVersion is set
// (another value is a ConflictError). Deleting a key with no value is not
// an error unless ifVersion is set.
func (s *Store) Delete(ctx context.Context, ns, key, ifVersion string) error {
	obj, err := s.object(ns, key)
	if err != nil {
		return err
	}
	if ifVersion == "" {
		if err := s.b.Delete(ctx, obj); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return errs.Unavailable(err)
		}
		return nil
	}
	v, err := decodeVersion("if_version", ifVersion)
	if err != nil {
		return err
	}
	if _, err := s.b.Put(ctx, obj, nil, blob.WriteOptions{IfMatch: v}); err != nil {
		return s.writeErr(ns, key, err)
	}
	return nil
}

// List returns a page of a namespace's keys that start with prefix, in
// key order: limit keys at most (0: DefaultPage), from cursor (the
// previous page's NextCursor). A page may hold fewer keys than the limit
// (deleted keys are skipped) and still have a next one.
func (s *Store) List(ctx context.Context, ns, prefix, cursor string, limit int) (*cairn.StorePage, error) {
	if err := namespaceRule.Check("namespace", ns); err != nil {
		return nil, err
	}
	if prefix != "" && !keyRule.Valid(prefix) {
		return nil, cairn.ValidationError{{Field: "prefix", Message: "must be the start of a key (" + cairn.StoreKeyPattern + ")"}}
	}
	token, err := keys.DecodeCursor("cursor", cursor)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultPage
	}
	limit = min(limit, MaxPage)
	base := s.prefix + ns + "/"
	page, err := s.b.List(ctx, blob.ListOptions{Prefix: base + prefix, PageSize: limit, PageToken: token})
	if err != nil {
		return nil, errs.Unavailable(err)
	}
	out := &cairn.StorePage{Keys: []cairn.StoreKeyInfo{}, NextCursor: keys.EncodeCursor(page.NextPageToken)}
	for _, a := range page.Objects {
		if a.Size == 0 || len(a.Key) <= len(base) {
			continue
		}
		out.Keys = append(out.Keys, cairn.StoreKeyInfo{Key: a.Key[len(base):], Version: encodeVersion(a.Version), Size: a.Size, UpdatedAt: a.ModTime.UTC()})
	}
	return out, nil
}

// Versions are the store's, in base64url: an S3 ETag holds quotes, and a
// version travels in queries and JSON.
func encodeVersion(v blob.Version) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }

func decodeVersion(field, s string) (blob.Version, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return "", cairn.ValidationError{{Field: field, Message: "not a version this store returned"}}
	}
	return blob.Version(b), nil
}
