package commit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// Cache is a bounded LRU of records by id: the bytes last written or read
// with their version, and the same decoded once for readers that share it.
type Cache[R any] struct {
	lru *cache.Cache[string, *entry[R]]
	rev func(*R) int64
}

type entry[R any] struct {
	data []byte
	ver  blob.Version
	rev  int64     // the record's revision; 0: not known until decoded
	at   time.Time // when this instance wrote or read it (monotonic)

	// decoded is data decoded once, shared read-only by every reader that
	// decides on this copy (Shared): a fan-out's claims would otherwise
	// each decode the whole record, which grows with the width, so a
	// W-wide fan-out cost O(W²). An entry is never changed after Put; a
	// new write puts a new entry.
	once    sync.Once
	decoded atomic.Pointer[R]
}

// NewCache returns a cache of up to max records; rev is a record's
// revision (Offer keeps the newer copy; nil when Offer is not used).
func NewCache[R any](max int, rev func(*R) int64) *Cache[R] {
	return &Cache[R]{lru: cache.New[string, *entry[R]](max), rev: rev}
}

// Get returns the cached bytes of id and their version.
func (c *Cache[R]) Get(id string) ([]byte, blob.Version, bool) {
	if e, ok := c.lru.Get(id); ok {
		return e.data, e.ver, true
	}
	return nil, "", false
}

// Shared returns the cached record of id decoded, decoding it once per
// cached version. The record is shared by every caller and must not be
// changed (nor any map, slice or pointer in it).
func (c *Cache[R]) Shared(id string) (*R, bool) {
	e, ok := c.lru.Get(id)
	if !ok {
		return nil, false
	}
	r := e.decode()
	return r, r != nil
}

// decode is the entry's record decoded, once (nil if it does not decode).
func (e *entry[R]) decode() *R {
	e.once.Do(func() {
		var r R
		if object.Decode(e.data, &r) == nil {
			e.decoded.Store(&r)
		}
	})
	return e.decoded.Load()
}

// Recent returns the cached record of id, decoded and shared as Shared's,
// when this instance wrote or read it within d: a copy that a change made
// elsewhere since would have dropped, if this instance heard of it (Heard).
func (c *Cache[R]) Recent(id string, d time.Duration) (*R, bool) {
	if e, ok := c.lru.Get(id); ok && time.Since(e.at) < d {
		r := e.decode()
		return r, r != nil
	}
	return nil, false
}

// Heard drops id's cached copy when it is older than rev: a change made
// on another instance, heard of on the bus. The committer would lose its
// next swap against that copy anyway, and a held request must not start
// from it (Recent).
func (c *Cache[R]) Heard(id string, rev int64) {
	e, ok := c.lru.Peek(id)
	if !ok || e.rev >= rev || c.rev == nil {
		return // an echo of this instance's own write costs no decode
	}
	if r := e.decode(); r == nil || c.rev(r) < rev {
		c.lru.DeleteIf(id, func(cur *entry[R]) bool { return cur == e }) // not a newer copy put meanwhile
	}
}

// Offer caches rec (data decoded, read at ver) unless the cached copy is
// known to be at least as new. rec becomes the entry's shared decoded
// copy: it must not be changed.
func (c *Cache[R]) Offer(id string, data []byte, ver blob.Version, rec *R) {
	ent := &entry[R]{data: data, ver: ver, rev: c.rev(rec), at: time.Now()}
	ent.decoded.Store(rec)
	ent.once.Do(func() {}) // decoded already
	c.lru.Offer(id, ent, func(cur *entry[R]) bool {
		known := cur.decoded.Load() // nil when not decoded yet (not decoded here)
		return cur.ver == ver || known != nil && c.rev(known) >= c.rev(rec)
	})
}

// Put caches data, written or read at ver, of revision rev (0: not known).
func (c *Cache[R]) Put(id string, data []byte, ver blob.Version, rev int64) {
	c.lru.Put(id, &entry[R]{data: data, ver: ver, rev: rev, at: time.Now()})
}

// Drop forgets id.
func (c *Cache[R]) Drop(id string) { c.lru.Delete(id) }
