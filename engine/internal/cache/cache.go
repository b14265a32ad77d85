// Package cache is a bounded map for an instance's caches: a fixed number
// of entries, or a total weight, beyond which it evicts the entry used
// least recently. It is safe for concurrent use.
package cache

import "sync"

// Cache is a bounded map from K to V. Get and Put mark an entry as used;
// Peek and Add leave the order alone, so a cache used only through them
// evicts in insertion order.
type Cache[K comparable, V any] struct {
	mu     sync.Mutex
	max    int
	weight func(V) int // nil: every entry weighs 1
	total  int
	items  map[K]*entry[K, V]
	root   entry[K, V] // root.next is the most recently used, root.prev the least
}

type entry[K comparable, V any] struct {
	key        K
	val        V
	w          int
	prev, next *entry[K, V]
}

// New returns a cache of at most max entries.
func New[K comparable, V any](max int) *Cache[K, V] {
	return NewWeighted[K](max, (func(V) int)(nil))
}

// NewWeighted returns a cache whose entries weigh at most max in all, an
// entry weighing weight(v).
func NewWeighted[K comparable, V any](max int, weight func(V) int) *Cache[K, V] {
	c := &Cache[K, V]{max: max, weight: weight, items: map[K]*entry[K, V]{}}
	c.root.next, c.root.prev = &c.root, &c.root
	return c
}

// Get returns k's value and marks it used.
func (c *Cache[K, V]) Get(k K) (V, bool) { return c.lookup(k, true) }

// Peek returns k's value without marking it used.
func (c *Cache[K, V]) Peek(k K) (V, bool) { return c.lookup(k, false) }

// lookup returns k's value, and marks it used if use.
func (c *Cache[K, V]) lookup(k K, use bool) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	if use {
		c.toFront(e)
	}
	return e.val, true
}

// Put sets k's value, marks it used and evicts what is beyond the bound.
func (c *Cache[K, V]) Put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, v)
}

// Add sets k's value when k is absent, and reports whether it did. A
// present k is left as it is, unmarked.
func (c *Cache[K, V]) Add(k K, v V) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return false
	}
	c.putLocked(k, v)
	return true
}

// Offer is Put unless k is present and keep says its value stays (keep
// runs under the cache's lock). It reports whether v was put.
func (c *Cache[K, V]) Offer(k K, v V, keep func(cur V) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok && keep(e.val) {
		return false
	}
	c.putLocked(k, v)
	return true
}

// Delete removes k.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.removeLocked(e)
	}
}

// DeleteIf removes k when del says so of its value (del runs under the
// cache's lock).
func (c *Cache[K, V]) DeleteIf(k K, del func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok && del(e.val) {
		c.removeLocked(e)
	}
}

// DeleteFunc removes the entries for which del returns true (del runs
// under the cache's lock).
func (c *Cache[K, V]) DeleteFunc(del func(K, V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.root.prev; e != &c.root; {
		prev := e.prev
		if del(e.key, e.val) {
			c.removeLocked(e)
		}
		e = prev
	}
}

// Len is the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

func (c *Cache[K, V]) weigh(v V) int {
	if c.weight == nil {
		return 1
	}
	return c.weight(v)
}

func (c *Cache[K, V]) putLocked(k K, v V) {
	w := c.weigh(v)
	if e, ok := c.items[k]; ok {
		c.total += w - e.w
		e.val, e.w = v, w
		c.toFront(e)
	} else {
		e := &entry[K, V]{key: k, val: v, w: w}
		c.items[k] = e
		c.total += w
		c.insertFront(e)
	}
	for c.total > c.max && c.root.prev != &c.root {
		c.removeLocked(c.root.prev)
	}
}

func (c *Cache[K, V]) removeLocked(e *entry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(c.items, e.key)
	c.total -= e.w
}

func (c *Cache[K, V]) insertFront(e *entry[K, V]) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}

func (c *Cache[K, V]) toFront(e *entry[K, V]) {
	if c.root.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	c.insertFront(e)
}
