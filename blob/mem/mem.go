// Package mem is an in-process blob driver: a map under a mutex. It is
// fast and exact, for tests and single-process experiments; nothing
// survives the process.
//
// URL form: mem:// (every OpenBucket call returns a new, empty bucket).
package mem

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/internal/keypage"
)

func init() {
	blob.Register("mem", func(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
		return New(), nil
	})
}

type object struct {
	data    []byte
	version blob.Version
	mod     time.Time
}

type driver struct {
	mu      sync.RWMutex
	objects map[string]object
	seq     uint64
}

// New returns an empty in-memory bucket.
func New() *blob.Bucket { return blob.NewBucket(&driver{objects: map[string]object{}}) }

func (d *driver) Get(ctx context.Context, key string) (*blob.Object, error) {
	d.mu.RLock()
	o, ok := d.objects[key]
	d.mu.RUnlock()
	if !ok {
		return nil, blob.ErrNotFound
	}
	return &blob.Object{Attributes: attrs(key, o), Data: append([]byte(nil), o.data...)}, nil
}

func attrs(key string, o object) blob.Attributes {
	return blob.Attributes{Key: key, Size: int64(len(o.data)), Version: o.version, ModTime: o.mod}
}

func (d *driver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	d.mu.RLock()
	o, ok := d.objects[key]
	d.mu.RUnlock()
	if !ok {
		return blob.Attributes{}, blob.ErrNotFound
	}
	return attrs(key, o), nil
}

func (d *driver) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, exists := d.objects[key]
	switch {
	case opts.IfNotExist && exists:
		return "", blob.ErrPreconditionFailed
	case opts.IfMatch != "" && !exists:
		return "", blob.ErrNotFound
	case opts.IfMatch != "" && cur.version != opts.IfMatch:
		return "", blob.ErrPreconditionFailed
	}
	d.seq++
	v := blob.Version(strconv.FormatUint(d.seq, 10))
	d.objects[key] = object{data: append([]byte(nil), data...), version: v, mod: time.Now()}
	return v, nil
}

func (d *driver) Delete(ctx context.Context, key string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.objects[key]; !ok {
		return blob.ErrNotFound
	}
	delete(d.objects, key)
	return nil
}

func (d *driver) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var keys []string
	for k := range d.objects {
		if strings.HasPrefix(k, opts.Prefix) && k > opts.PageToken && k > opts.StartAfter {
			keys = append(keys, k)
		}
	}
	return keypage.Page(keys, opts.PageSize, func(k string) (blob.Attributes, bool, error) {
		return attrs(k, d.objects[k]), true, nil
	})
}

func (d *driver) As(target any) bool { return false }

func (d *driver) Close() error { return nil }
