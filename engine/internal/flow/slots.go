package flow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
	"github.com/cairn-dev/cairn/notify"
)

// Concurrency limits. Each limit key has one object, limits/<sha256(scope,
// key)>, holding the attempts that hold a slot under it. A claim adds its
// attempt by compare-and-swap before it creates the lease, so a lease
// never exists without its slot; the slot is removed (CAS) when the
// attempt ends. A slot whose attempt ended without its removal (an
// instance died) is recovered by a claim that finds the key full (Take,
// through the Table's Stale).

// SlotGrace is how long a slot may name a lease that does not exist yet
// (its claimer is between the slot write and the lease write) before a
// claim that needs the slot may fence the attempt.
const SlotGrace = 10 * time.Second

// ParkFor is how long a hint whose attempt waits for a concurrency slot
// stays out of the hub when no slot of its key frees on this instance (a
// slot freed on another instance is noticed then).
const ParkFor = time.Second

const (
	// staleCheckEvery bounds how often one instance looks for stale
	// slots under one full key (each look reads up to staleCheckMax
	// leases).
	staleCheckEvery = 250 * time.Millisecond
	staleCheckMax   = 8
	casTries        = 24
)

// Object is the stored state of one concurrency key.
type Object struct {
	Scope   string   `json:"scope"`
	Key     string   `json:"key"`
	Holders []Holder `json:"holders"`
}

// Holder is one attempt holding a slot: enough to find its lease and to
// fence the attempt if the lease never appears.
type Holder struct {
	Run      string    `json:"run"`
	Step     string    `json:"step"`
	Attempt  int       `json:"attempt"`
	Tag      string    `json:"tag"` // Tag of the lease nonce (the nonce is the lease's secret)
	Worker   string    `json:"worker"`
	Workflow string    `json:"workflow"`
	Version  string    `json:"version"`
	At       time.Time `json:"at"`
}

// Tag is what a slot records of its lease's nonce: a prefix of its
// sha256.
func Tag(nonce string) string {
	h := sha256.Sum256([]byte(nonce))
	return hex.EncodeToString(h[:12])
}

// Is reports whether h is the slot of the attempt of run, step and
// attempt whose lease has nonce.
func (h Holder) Is(run, step string, attempt int, nonce string) bool {
	return h.Run == run && h.Step == step && h.Attempt == attempt && h.Tag == Tag(nonce)
}

// Table is one instance's access to the concurrency keys of a bucket, and
// its memory of them: hints parked until a slot of their key frees, and
// when each full key was last searched for stale slots. Only hints:
// losing that memory costs latency.
type Table struct {
	bucket *blob.Bucket
	keys   keys.Layout
	now    func() time.Time
	stale  func(context.Context, Holder) (bool, error)

	mu      sync.Mutex
	parked  map[string]map[string]notify.Hint // limit object key → hint key → hint
	checked *cache.Cache[string, time.Time]   // limit object key → last stale search (wall clock)
}

// NewTable returns the concurrency keys of bucket under layout k. now is
// the engine's clock; stale decides whether a holder's attempt is over
// (and makes it so it cannot go on), for a claim that finds a key full.
func NewTable(bucket *blob.Bucket, k keys.Layout, now func() time.Time, stale func(context.Context, Holder) (bool, error)) *Table {
	return &Table{bucket: bucket, keys: k, now: now, stale: stale, checked: cache.New[string, time.Time](10_000)}
}

// Key is the object key of scope's concurrency key name.
func (t *Table) Key(scope, name string) string { return t.keys.Limit(scope, name) }

// Read returns the object at key.
func (t *Table) Read(ctx context.Context, key string) (*Object, blob.Version, error) {
	o, err := t.bucket.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	obj := new(Object)
	if err := json.Unmarshal(o.Data, obj); err != nil {
		return nil, "", err
	}
	return obj, o.Version, nil
}

// Take adds holder to the object at key unless limit attempts hold it
// already (after removing stale holders). A lost race re-reads; a key
// still contended after casTries answers false.
func (t *Table) Take(ctx context.Context, key, scope, name string, limit int, holder Holder) (bool, error) {
	for try := 0; try < casTries; try++ {
		obj, ver, err := t.Read(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			obj, ver, err = &Object{Scope: scope, Key: clipKey(name)}, "", nil
		}
		if err != nil {
			return false, err
		}
		obj.Holders = slices.DeleteFunc(obj.Holders, func(x Holder) bool { return x.Tag == holder.Tag })
		if len(obj.Holders) >= limit {
			stale, err := t.staleHolders(ctx, key, obj.Holders)
			if err != nil {
				return false, err
			}
			if len(stale) == 0 {
				return false, nil
			}
			obj.Holders = slices.DeleteFunc(obj.Holders, func(x Holder) bool { return stale[x.Tag] })
			if len(obj.Holders) >= limit {
				return false, nil
			}
		}
		holder.At = t.now() // the lease write must follow within SlotGrace
		obj.Holders = append(obj.Holders, holder)
		data, err := json.Marshal(obj)
		if err != nil {
			return false, err
		}
		if ver == "" {
			_, err = t.bucket.Create(ctx, key, data)
		} else {
			_, err = t.bucket.Swap(ctx, key, data, ver)
		}
		if err == nil {
			return true, nil
		}
		if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrConflict) {
			throttle.Jitter(ctx, try/4)
			continue
		}
		// Unknown outcome: the write may have landed.
		if got, _, rerr := t.Read(ctx, key); rerr == nil {
			if slices.ContainsFunc(got.Holders, func(x Holder) bool { return x.Tag == holder.Tag }) {
				return true, nil
			}
		}
		if !blob.IsRetryable(err) {
			return false, err
		}
		throttle.Jitter(ctx, try)
	}
	return false, nil // contended: the hint comes back after ParkFor
}

// Want is one concurrency slot a claim needs: the limit object's key
// (Table.Key of scope and name) and its limit.
type Want struct {
	Obj, Scope, Name string
	Limit            int
}

// Wants renders the keys of step's flow control (sf; the claim's vars):
// the slots its concurrency limits want, and its rate limit's key. An
// error names the option whose key did not render.
func (t *Table) Wants(sf *Step, step string, vars render.Vars) (slots []Want, rateKey string, err error) {
	for _, c := range sf.Limits {
		k, err := RenderKey(c.Key, vars)
		if err != nil {
			return nil, "", fmt.Errorf("%s of step %s: %w", c.Field, step, err)
		}
		slots = append(slots, Want{Obj: t.Key(c.Scope, k), Scope: c.Scope, Name: k, Limit: c.Limit})
	}
	if rl := sf.Rate; rl != nil {
		if rateKey, err = RenderKey(rl.Key, vars); err != nil {
			return nil, "", fmt.Errorf("%s of step %s: %w", rl.Field, step, err)
		}
	}
	return slots, rateKey, nil
}

// TakeAll takes a slot for holder under every key of wants, in order, or
// none: it returns the objects' keys when it took them all. When a key is
// full, h is parked on it and its NotBefore set ParkFor ahead. Slots
// taken before a refusal or an error are handed to giveBack (which
// releases them and wakes what waits on them); so are all of them when
// the takes took longer than SlotGrace/2: a claim that needs a slot may
// soon take this one for a dead claimer's, so give the slots back and
// try again later.
func (t *Table) TakeAll(ctx context.Context, wants []Want, holder Holder, h *notify.Hint, giveBack func(taken []string)) ([]string, error) {
	var taken []string
	first := t.now()
	for _, w := range wants {
		got, err := t.Take(ctx, w.Obj, w.Scope, w.Name, w.Limit, holder)
		if err == nil && !got {
			t.Park(w.Obj, *h)
			h.NotBefore = t.now().Add(ParkFor)
		}
		if err != nil || !got {
			giveBack(taken)
			return nil, err
		}
		taken = append(taken, w.Obj)
	}
	if len(wants) > 0 && t.now().Sub(first) > SlotGrace/2 {
		giveBack(taken)
		return nil, nil
	}
	return taken, nil
}

// Release removes the holders is matches from the object at key.
func (t *Table) Release(ctx context.Context, key string, is func(Holder) bool) error {
	for try := 0; ; try++ {
		obj, ver, err := t.Read(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		n := len(obj.Holders)
		obj.Holders = slices.DeleteFunc(obj.Holders, is)
		if len(obj.Holders) == n {
			return nil
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = t.bucket.Swap(ctx, key, data, ver)
		if err == nil {
			return nil
		}
		if try >= casTries || !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) {
			return err
		}
		throttle.Jitter(ctx, try/4)
	}
}

// staleHolders returns the tags of holders whose attempts are over,
// looking at the oldest staleCheckMax at most, at most once per
// staleCheckEvery per key on this instance.
func (t *Table) staleHolders(ctx context.Context, key string, hs []Holder) (map[string]bool, error) {
	if !t.mayCheck(key) {
		return nil, nil
	}
	sorted := slices.Clone(hs)
	slices.SortFunc(sorted, func(a, b Holder) int { return a.At.Compare(b.At) })
	stale := map[string]bool{}
	for i, h := range sorted {
		if i == staleCheckMax {
			break
		}
		ok, err := t.stale(ctx, h)
		if err != nil {
			return nil, err
		}
		if ok {
			stale[h.Tag] = true
		}
	}
	return stale, nil
}

// mayCheck reports whether this instance may search key for stale slots
// now, and records the search.
func (t *Table) mayCheck(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if at, ok := t.checked.Get(key); ok && now.Sub(at) < staleCheckEvery {
		return false
	}
	t.checked.Put(key, now)
	return true
}

// Park keeps h until a slot of key frees on this instance (Unpark).
func (t *Table) Park(key string, h notify.Hint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parked == nil {
		t.parked = map[string]map[string]notify.Hint{}
	}
	m := t.parked[key]
	if m == nil {
		if len(t.parked) > 10_000 {
			clear(t.parked) // bounded: parked hints come back after ParkFor anyway
		}
		m = map[string]notify.Hint{}
		t.parked[key] = m
	}
	if len(m) < 1000 {
		m[h.Key()] = h
	}
}

// Holds reports whether a hint for x's step and attempt (or a later one)
// is parked on any key.
func (t *Table) Holds(x notify.Hint) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.parked {
		if cur, ok := m[x.Key()]; ok && cur.Attempt >= x.Attempt {
			return true
		}
	}
	return false
}

// Unpark returns and forgets the hints parked on key.
func (t *Table) Unpark(key string) []notify.Hint {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.parked[key]
	delete(t.parked, key)
	out := make([]notify.Hint, 0, len(m))
	for _, h := range m {
		out = append(out, h)
	}
	return out
}
