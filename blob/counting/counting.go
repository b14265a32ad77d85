// Package counting is a blob middleware that counts the operations a
// bucket receives, by kind: the basis of cairn's cost metric.
//
// Object stores bill per request. On S3 Standard, PUT, COPY, POST and LIST
// requests cost $5 per million and GET and HEAD $0.40 per million; DELETE
// is free. Counts.Cost prices a count with those rates.
//
//	b, counts := counting.Wrap(bucket)
//	… use b …
//	fmt.Println(counts.Snapshot())
package counting

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/cairn-dev/cairn/blob"
)

// Counts is a set of operation counters, safe for concurrent use. Every
// request is counted, whether it succeeded or not: stores bill both.
type Counts struct {
	get, stat, create, swap, put, delete, list atomic.Int64
}

// Snapshot is a point-in-time copy of Counts.
type Snapshot struct {
	Get, Stat, Create, Swap, Put, Delete, List int64
}

// Snapshot returns the current counts.
func (c *Counts) Snapshot() Snapshot {
	return Snapshot{
		Get: c.get.Load(), Stat: c.stat.Load(), Create: c.create.Load(), Swap: c.swap.Load(),
		Put: c.put.Load(), Delete: c.delete.Load(), List: c.list.Load(),
	}
}

// Reset sets every counter to zero.
func (c *Counts) Reset() {
	for _, a := range []*atomic.Int64{&c.get, &c.stat, &c.create, &c.swap, &c.put, &c.delete, &c.list} {
		a.Store(0)
	}
}

// Reads is the number of GET-class requests (GET and HEAD).
func (s Snapshot) Reads() int64 { return s.Get + s.Stat }

// Writes is the number of PUT requests, of every kind.
func (s Snapshot) Writes() int64 { return s.Create + s.Swap + s.Put }

// PutClass is the number of requests S3 bills at the PUT rate: writes and
// lists.
func (s Snapshot) PutClass() int64 { return s.Writes() + s.List }

// Total is the number of requests of every kind.
func (s Snapshot) Total() int64 { return s.Reads() + s.Writes() + s.List + s.Delete }

// Sub returns the counts made between an earlier snapshot and s.
func (s Snapshot) Sub(earlier Snapshot) Snapshot {
	return Snapshot{
		Get: s.Get - earlier.Get, Stat: s.Stat - earlier.Stat, Create: s.Create - earlier.Create,
		Swap: s.Swap - earlier.Swap, Put: s.Put - earlier.Put, Delete: s.Delete - earlier.Delete, List: s.List - earlier.List,
	}
}

// S3 Standard request prices, in US dollars per request.
const (
	PutClassPrice = 5.0 / 1e6
	GetClassPrice = 0.4 / 1e6
)

// Cost prices the counts at S3 Standard request rates, in US dollars.
func (s Snapshot) Cost() float64 {
	return float64(s.PutClass())*PutClassPrice + float64(s.Reads())*GetClassPrice
}

func (s Snapshot) String() string {
	return fmt.Sprintf("get=%d head=%d create=%d swap=%d put=%d list=%d delete=%d (reads=%d put-class=%d, $%.6f)",
		s.Get, s.Stat, s.Create, s.Swap, s.Put, s.List, s.Delete, s.Reads(), s.PutClass(), s.Cost())
}

// Wrap returns a bucket that counts every operation into the returned
// Counts, then passes it to b. Closing the returned bucket closes b.
func Wrap(b *blob.Bucket) (*blob.Bucket, *Counts) {
	c := &Counts{}
	return blob.NewBucket(&driver{next: b.Driver(), c: c}), c
}

type driver struct {
	next blob.Driver
	c    *Counts
}

func (d *driver) Get(ctx context.Context, key string) (*blob.Object, error) {
	d.c.get.Add(1)
	return d.next.Get(ctx, key)
}

func (d *driver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	d.c.stat.Add(1)
	return d.next.Stat(ctx, key)
}

func (d *driver) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	switch {
	case opts.IfNotExist:
		d.c.create.Add(1)
	case opts.IfMatch != "":
		d.c.swap.Add(1)
	default:
		d.c.put.Add(1)
	}
	return d.next.Put(ctx, key, data, opts)
}

func (d *driver) Delete(ctx context.Context, key string) error {
	d.c.delete.Add(1)
	return d.next.Delete(ctx, key)
}

func (d *driver) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	d.c.list.Add(1)
	return d.next.List(ctx, opts)
}

// As supports *Counts and otherwise asks the wrapped driver.
func (d *driver) As(target any) bool {
	if p, ok := target.(**Counts); ok {
		*p = d.c
		return true
	}
	return d.next.As(target)
}

func (d *driver) Close() error { return d.next.Close() }
