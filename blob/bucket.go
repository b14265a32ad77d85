package blob

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Bucket is a conditional-write object store. It validates arguments,
// fails calls whose context is already done, names the operation and key in
// every error, and delegates to a Driver. A Bucket is safe for concurrent
// use.
type Bucket struct {
	d      Driver
	closed atomic.Bool
}

// NewBucket returns a Bucket backed by d. Drivers' constructors call it;
// users open buckets with a driver's constructor or OpenBucket.
func NewBucket(d Driver) *Bucket { return &Bucket{d: d} }

// Driver returns the driver behind b, for middlewares that wrap it.
func (b *Bucket) Driver() Driver { return b.d }

func (b *Bucket) check(op, key string) error {
	if b.closed.Load() {
		return &Error{Op: op, Key: key, Err: ErrClosed}
	}
	if err := ValidateKey(key); err != nil {
		return &Error{Op: op, Key: key, Err: err}
	}
	return nil
}

// live fails a call whose context is already done, so that no driver is
// called with one (drivers need not check on entry).
func live(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Key: key, Err: err}
	}
	return nil
}

func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*Error); ok {
		return err
	}
	return &Error{Op: op, Key: key, Err: err}
}

// Get reads an object and its version.
func (b *Bucket) Get(ctx context.Context, key string) (*Object, error) {
	if err := b.check("get", key); err != nil {
		return nil, err
	}
	if err := live(ctx, "get", key); err != nil {
		return nil, err
	}
	o, err := b.d.Get(ctx, key)
	return o, wrap("get", key, err)
}

// Stat reads an object's attributes.
func (b *Bucket) Stat(ctx context.Context, key string) (Attributes, error) {
	if err := b.check("stat", key); err != nil {
		return Attributes{}, err
	}
	if err := live(ctx, "stat", key); err != nil {
		return Attributes{}, err
	}
	a, err := b.d.Stat(ctx, key)
	return a, wrap("stat", key, err)
}

// Create writes an object only if its key does not exist yet. It fails
// with ErrPreconditionFailed when it does; of several concurrent creators
// exactly one succeeds.
func (b *Bucket) Create(ctx context.Context, key string, data []byte) (Version, error) {
	return b.Put(ctx, key, data, WriteOptions{IfNotExist: true})
}

// Swap replaces an object only if its current version is v (a
// compare-and-swap) and returns the new version. It fails with
// ErrPreconditionFailed when the object has another version and with
// ErrNotFound or ErrPreconditionFailed when it no longer exists; of several
// concurrent swappers holding v exactly one succeeds.
func (b *Bucket) Swap(ctx context.Context, key string, data []byte, v Version) (Version, error) {
	if v == "" {
		return "", &Error{Op: "swap", Key: key, Err: fmt.Errorf("%w: empty version", ErrInvalidArgument)}
	}
	return b.Put(ctx, key, data, WriteOptions{IfMatch: v})
}

// Put writes an object under the condition opts names (none: an
// unconditional write) and returns the new version.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts WriteOptions) (Version, error) {
	op := opName(opts)
	if err := b.check(op, key); err != nil {
		return "", err
	}
	if opts.IfNotExist && opts.IfMatch != "" {
		return "", &Error{Op: op, Key: key, Err: fmt.Errorf("%w: IfNotExist and IfMatch both set", ErrInvalidArgument)}
	}
	if data == nil {
		data = []byte{}
	}
	if err := live(ctx, op, key); err != nil {
		return "", err
	}
	v, err := b.d.Put(ctx, key, data, opts)
	return v, wrap(op, key, err)
}

func opName(opts WriteOptions) string {
	switch {
	case opts.IfNotExist:
		return "create"
	case opts.IfMatch != "":
		return "swap"
	default:
		return "put"
	}
}

// Delete removes an object unconditionally. It returns ErrNotFound when
// the object does not exist. Deletes are never conditional: MinIO ignores
// conditional deletes, so correctness must never depend on one.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := b.check("delete", key); err != nil {
		return err
	}
	if err := live(ctx, "delete", key); err != nil {
		return err
	}
	return wrap("delete", key, b.d.Delete(ctx, key))
}

// List returns one page of the objects whose keys start with opts.Prefix,
// in ascending key order.
func (b *Bucket) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	if b.closed.Load() {
		return ListPage{}, &Error{Op: "list", Key: opts.Prefix, Err: ErrClosed}
	}
	if opts.PageSize < 0 {
		return ListPage{}, &Error{Op: "list", Key: opts.Prefix, Err: fmt.Errorf("%w: negative page size", ErrInvalidArgument)}
	}
	if opts.PageSize == 0 || opts.PageSize > 1000 {
		opts.PageSize = 1000
	}
	if err := live(ctx, "list", opts.Prefix); err != nil {
		return ListPage{}, err
	}
	p, err := b.d.List(ctx, opts)
	return p, wrap("list", opts.Prefix, err)
}

// ListAll returns every object whose key starts with prefix, following
// pages. Meant for small prefixes and tests; the engine's hot paths never
// list.
func (b *Bucket) ListAll(ctx context.Context, prefix string) ([]Attributes, error) {
	var all []Attributes
	opts := ListOptions{Prefix: prefix}
	for {
		p, err := b.List(ctx, opts)
		if err != nil {
			return all, err
		}
		all = append(all, p.Objects...)
		if p.NextPageToken == "" {
			return all, nil
		}
		opts.PageToken = p.NextPageToken
	}
}

// As gives access to the driver's underlying client: each driver documents
// the types it supports (for example *s3.Client for the s3 driver). It
// reports whether target was set.
func (b *Bucket) As(target any) bool { return b.d.As(target) }

// Close releases the bucket's resources. Calls after Close fail with
// ErrClosed.
func (b *Bucket) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	return b.d.Close()
}
