// Package par runs the engine's bounded fan-outs — a reaper pass's run
// visits, a run's lease reads, a batch of heartbeats, a map's shard
// reads: each a loop of independent store requests that may overlap, a
// few at a time — and holds the small concurrent containers they share
// (a set, lists by key, a memo).
package par

import (
	"context"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Each calls fn(i) for every i in [0, count), at most n at once, and
// returns when every call has returned. A goroutine is started only when
// a slot is free, so a long list never holds more than n goroutines.
func Each(n, count int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(max(n, 1))
	for i := range count {
		g.Go(func() error {
			fn(i)
			return nil
		})
	}
	_ = g.Wait() // fn returns no error
}

// Gather is Each whose calls return a result: each is handed to add,
// one at a time (a reaper pass sums its visits' counters so).
func Gather[T any](n, count int, fn func(i int) T, add func(T)) {
	var mu sync.Mutex
	Each(n, count, func(i int) {
		v := fn(i)
		mu.Lock()
		defer mu.Unlock()
		add(v)
	})
}

// Set is a set safe for concurrent use (the zero value is empty).
type Set[K comparable] struct{ m sync.Map }

// Has reports whether k was added.
func (s *Set[K]) Has(k K) bool { _, ok := s.m.Load(k); return ok }

// Add adds k.
func (s *Set[K]) Add(k K) { s.m.Store(k, struct{}{}) }

// Lists keeps a list of values by key, safe for concurrent use (the zero
// value is empty).
type Lists[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K][]V
}

// Add appends v to k's list.
func (l *Lists[K, V]) Add(k K, v V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[K][]V{}
	}
	l.m[k] = append(l.m[k], v)
}

// Get returns a copy of k's list.
func (l *Lists[K, V]) Get(k K) []V {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.m[k])
}

// Has reports whether k's list holds anything.
func (l *Lists[K, V]) Has(k K) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m[k]) > 0
}

// Drop forgets k's list.
func (l *Lists[K, V]) Drop(k K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, k)
}

// Memo computes each key's value at most once, concurrently with its
// caller: Start begins a computation unless one was begun, Get waits for
// it (or for ctx).
type Memo[K comparable, V any] struct {
	fn func(K) (V, error)
	mu sync.Mutex
	m  map[K]*memoCall[V]
}

type memoCall[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// NewMemo returns a Memo of fn.
func NewMemo[K comparable, V any](fn func(K) (V, error)) *Memo[K, V] {
	return &Memo[K, V]{fn: fn, m: map[K]*memoCall[V]{}}
}

// Start begins computing k's value unless that was begun.
func (m *Memo[K, V]) Start(k K) { m.start(k) }

func (m *Memo[K, V]) start(k K) *memoCall[V] {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.m[k]; ok {
		return c
	}
	c := &memoCall[V]{done: make(chan struct{})}
	m.m[k] = c
	go func() {
		defer close(c.done)
		c.v, c.err = m.fn(k)
	}()
	return c
}

// Get returns k's value, computing it first if nobody began to.
func (m *Memo[K, V]) Get(ctx context.Context, k K) (V, error) {
	c := m.start(k)
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}
