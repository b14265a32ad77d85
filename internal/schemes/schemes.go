// Package schemes is a registry of what opens a URL, by its scheme: the
// blob drivers register their bucket openers in one, the notify drivers
// their bus openers in another, each from its package's init.
package schemes

import (
	"slices"
	"strings"
	"sync"
)

// Registry maps schemes, case-insensitively, to openers of type O. The
// zero value is not usable; make one with New.
type Registry[O any] struct {
	pkg string
	mu  sync.RWMutex
	m   map[string]O
}

// New returns an empty registry; pkg prefixes its panics ("blob").
func New[O any](pkg string) *Registry[O] {
	return &Registry[O]{pkg: pkg, m: map[string]O{}}
}

// Register makes o the opener of scheme. An empty scheme, or one
// registered already, panics: drivers register from init.
func (r *Registry[O]) Register(scheme string, o O) {
	scheme = strings.ToLower(scheme)
	if scheme == "" {
		panic(r.pkg + ": Register with an empty scheme")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[scheme]; dup {
		panic(r.pkg + ": scheme " + scheme + " registered twice")
	}
	r.m[scheme] = o
}

// Lookup returns the opener of scheme, if one is registered.
func (r *Registry[O]) Lookup(scheme string) (O, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	o, ok := r.m[strings.ToLower(scheme)]
	return o, ok
}

// Schemes lists the registered schemes, sorted.
func (r *Registry[O]) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for s := range r.m {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
