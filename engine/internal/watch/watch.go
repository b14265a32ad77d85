// Package watch is one instance's registry of requests waiting for a
// run to change. The committer signals it after each write on this
// instance, and run-change notices from the bus signal it for writes on
// other instances, so a waiting request answers within milliseconds of a
// change and reads the bucket only when told of one (plus the caller's
// slow fallback read, in case a notice was lost).
package watch

import "sync"

// Registry holds the waiting requests of every watched run; T is the
// record they read. The zero Registry is not ready: use New.
type Registry[T any] struct {
	mu   sync.Mutex
	runs map[string]*Watch[T]
}

// Watch is the waiting requests of one run.
type Watch[T any] struct {
	n int // requests registered
	// heard is the newest revision this instance was told of while
	// someone waited; next is closed (and replaced) when it grows.
	heard int64
	next  chan struct{}

	// readMu makes the requests woken by one change share one read.
	readMu sync.Mutex
	latest *T    // the newest record read for them (shared, read-only)
	rev    int64 // latest's revision
}

// New returns an empty registry.
func New[T any]() *Registry[T] { return &Registry[T]{runs: map[string]*Watch[T]{}} }

// Add registers a waiting request on run; call the returned stop when it
// answers.
func (r *Registry[T]) Add(run string) (*Watch[T], func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.runs[run]
	if w == nil {
		w = &Watch[T]{next: make(chan struct{})}
		r.runs[run] = w
	}
	w.n++
	return w, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if w.n--; w.n == 0 {
			delete(r.runs, run)
		}
	}
}

// Changed says run's record now has revision rev. Runs nobody waits on
// cost a map lookup.
func (r *Registry[T]) Changed(run string, rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.runs[run]; w != nil && rev > w.heard {
		w.heard = rev
		close(w.next)
		w.next = make(chan struct{})
	}
}

// State returns the newest revision heard of and a channel closed when a
// newer one is.
func (r *Registry[T]) State(w *Watch[T]) (int64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return w.heard, w.next
}

// Waiting is the number of requests waiting on run.
func (r *Registry[T]) Waiting(run string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.runs[run]; w != nil {
		return w.n
	}
	return 0
}

// AtLeast returns a record of revision rev or newer for a request woken
// by a change: the one already read for another request of this watch,
// else one read (read returns the record and its revision) shared by
// every request that asks meanwhile.
func (w *Watch[T]) AtLeast(rev int64, read func() (*T, int64, error)) (*T, error) {
	w.readMu.Lock()
	defer w.readMu.Unlock()
	if w.latest != nil && w.rev >= rev {
		return w.latest, nil
	}
	r, got, err := read()
	if err != nil {
		return nil, err
	}
	if w.latest == nil || got > w.rev {
		w.latest, w.rev = r, got
	}
	return r, nil
}
