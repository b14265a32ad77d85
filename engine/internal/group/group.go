// Package group commits small entries of many requests in shared object
// writes: the entries added under one key while a write for that key is
// in flight wait and share the next write (group commit, as the run
// records' committer does for one run's mutations). A caller returns once
// the write holding its entry landed, so an entry is as durable as if it
// had its own object; under concurrency N callers cost one write, alone a
// caller costs what it did before.
//
// What a write is — which object, what body — is the user's: run timers
// of the starts of one due time (engine/internal/timer), audit records
// (the engine's audit log).
package group

import (
	"context"
	"sync"
	"time"
)

// Writer groups entries by key. The zero value is not usable: set Write.
type Writer[E any] struct {
	// Write writes one batch of entries added under key, all at once or
	// not at all (one object). It is called with at most Max entries, and
	// for one key never while another batch of that key is in flight
	// (unless a batch filled: a full batch is written at once).
	Write func(ctx context.Context, key string, batch []E) error
	// Max is the most entries one write holds (0: 1,000).
	Max int
	// Timeout bounds a write (0: 30 s). A batch's write is not cancelled
	// by its callers' contexts: it holds other callers' entries.
	Timeout time.Duration

	mu   sync.Mutex
	keys map[string]*pending[E]
}

// pending is one key's state: the batch being filled while a write of
// the key is in flight (nil: none), and whether one is.
type pending[E any] struct {
	open *batch[E]
	busy bool
}

type batch[E any] struct {
	entries []E
	done    chan struct{}
	err     error
}

// Add adds e under key and returns once a write holding it landed (nil)
// or failed (its error), or ctx ended first (ctx's error: the entry may
// still be written).
func (w *Writer[E]) Add(ctx context.Context, key string, e E) error {
	w.mu.Lock()
	if w.keys == nil {
		w.keys = map[string]*pending[E]{}
	}
	p := w.keys[key]
	if p == nil {
		p = &pending[E]{}
		w.keys[key] = p
	}
	if p.open == nil {
		p.open = &batch[E]{done: make(chan struct{})}
	}
	b := p.open
	b.entries = append(b.entries, e)
	switch {
	case !p.busy: // no write in flight: this one goes now
		p.busy, p.open = true, nil
		w.mu.Unlock()
		w.flush(key, b)
	case len(b.entries) >= w.max(): // full: written now, beside the one in flight
		p.open = nil
		w.mu.Unlock()
		go w.write(key, b)
	default: // joins the batch written when the one in flight lands
		w.mu.Unlock()
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush writes b, then whatever batch of key filled meanwhile, until
// none did. Only the first write is the caller's own: the next ones run
// in the background, so no caller waits for batches after its own.
func (w *Writer[E]) flush(key string, b *batch[E]) {
	w.write(key, b)
	w.mu.Lock()
	p := w.keys[key]
	next := p.open
	if next == nil {
		delete(w.keys, key)
		w.mu.Unlock()
		return
	}
	p.open = nil // stays busy: the next write is in flight
	w.mu.Unlock()
	go w.flush(key, next)
}

func (w *Writer[E]) write(key string, b *batch[E]) {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b.err = w.Write(ctx, key, b.entries)
	close(b.done)
}

func (w *Writer[E]) max() int {
	if w.Max <= 0 {
		return 1000
	}
	return w.Max
}
