// Package catalog is the engine's store of workflow definitions: each
// (name, version) stored once, create-only and immutable, compiled once
// per instance; and each workflow's latest record (the newest version and
// every version in registration order), cached per instance for a bounded
// time. What a compiled definition is belongs to the engine (the Compile
// func); this package only stores, compares and caches.
package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/flight"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// Host is what a catalog needs from the engine.
type Host[D any] struct {
	Store *blob.Bucket
	Keys  keys.Layout
	Now   func() time.Time
	// Compile compiles a definition (field names it in errors).
	Compile func(w cairn.Workflow, field string) (D, error)
	// Registered is told of a workflow whose latest record a
	// registration changed (the engine tells the other instances).
	Registered func(name string)
	// LatestTTL bounds how long a cached newest version is trusted.
	LatestTTL time.Duration
	// ReadTimeout bounds a read of a latest record shared by callers.
	ReadTimeout time.Duration
	// Replace lets a registration with other content replace a stored
	// definition (cairn dev) instead of being refused: every content
	// registered is also kept as its revision, <version>~<Sum>, which the
	// runs started on it go on reading (Revision). Log says so.
	Replace bool
	Log     *slog.Logger
}

// Catalog is one instance's view of the stored definitions.
type Catalog[D any] struct {
	h Host[D]

	mu   sync.RWMutex
	defs map[keys.WorkflowID]D
	// registered is the hash of the stored form of each definition this
	// instance registered to the end (stored and recorded in the latest
	// record): registering it again is a no-op, answered without
	// compiling it or reading the bucket. Every worker registers its
	// definitions when it starts, so a fleet of workers of one wide
	// workflow would otherwise read the whole definition once each.
	registered map[keys.WorkflowID][sha256.Size]byte

	latest latestCache
	// reads coalesces concurrent reads of one workflow's latest record
	// at one cache generation: a burst of starts when the cached version
	// expired reads it once, not once a start.
	reads flight.Group[string]
}

// New returns a catalog over h.
func New[D any](h Host[D]) *Catalog[D] {
	return &Catalog[D]{h: h, defs: map[keys.WorkflowID]D{}, registered: map[keys.WorkflowID][sha256.Size]byte{}, reads: flight.Group[string]{Timeout: h.ReadTimeout}}
}

// Sum names a definition's content: the first 8 bytes of the SHA-256 of
// its stored form, in hex.
func Sum(w cairn.Workflow) string {
	s := sha256.Sum256(Canonical(w))
	return hex.EncodeToString(s[:8])
}

// Revision is the version a run reads its definition as: version itself,
// or with a sum (Replace) the content it started with, version~sum.
func Revision(version, sum string) string {
	if sum == "" {
		return version
	}
	return version + "~" + sum
}

// Canonical returns a definition's stored form: the same content always
// gives the same bytes, so re-registration can be compared byte for byte.
func Canonical(w cairn.Workflow) []byte {
	var v any
	_ = json.Unmarshal(object.JSON(w), &v) // maps marshal with sorted keys
	return object.JSON(v)
}

// Register stores definitions: new ones create-only, identical ones are a
// no-op, a known (name, version) with other content is a ConflictError.
func (c *Catalog[D]) Register(ctx context.Context, wfs []cairn.Workflow) error {
	for i, w := range wfs {
		field := fmt.Sprintf("workflows[%d]", i)
		data := Canonical(w)
		sum := sha256.Sum256(data)
		id := keys.WorkflowID{Name: w.Name, Version: w.Version}
		c.mu.RLock()
		known, ok := c.registered[id]
		c.mu.RUnlock()
		if ok && known == sum {
			continue // registered here before, byte for byte
		}
		d, err := c.h.Compile(w, field)
		if err != nil {
			return err
		}
		key := c.h.Keys.Workflow(w.Name, w.Version)
		if c.h.Replace { // the revision first: a run may start on it once key holds it
			if _, err := c.h.Store.Create(ctx, c.h.Keys.Workflow(w.Name, Revision(w.Version, Sum(w))), data); err != nil && !errors.Is(err, blob.ErrPreconditionFailed) {
				return err
			}
		}
		_, err = c.h.Store.Create(ctx, key, data)
		switch {
		case err == nil:
		case errors.Is(err, blob.ErrPreconditionFailed):
			o, err := c.h.Store.Get(ctx, key)
			if err != nil {
				return err
			}
			if !bytes.Equal(o.Data, data) && c.h.Replace {
				if _, err := c.h.Store.Put(ctx, key, data, blob.WriteOptions{IfMatch: o.Version}); err != nil {
					return fmt.Errorf("%s: replacing workflow %s version %s: %w", field, w.Name, w.Version, err)
				}
				c.h.Log.Info("workflow definition changed: new runs use the new one, runs in flight keep the one they started with (cairn dev; a deployment refuses the change)", "workflow", w.Name, "version", w.Version)
			} else if !bytes.Equal(o.Data, data) {
				return &errs.ConflictError{Message: fmt.Sprintf("%s: workflow %s version %s is already registered with other content; definitions are immutable, register a new version", field, w.Name, w.Version)}
			}
			// The definition may have been written by a registration that
			// died (or lost its answer) before it recorded the version in
			// the workflow's latest record: finish that write too, or the
			// version could never be started by name nor listed. A version
			// already recorded costs this one read.
		default:
			return err
		}
		if err := c.bumpLatest(ctx, w.Name, w.Version); err != nil {
			return err
		}
		c.mu.Lock()
		c.defs[id] = d
		c.registered[id] = sum
		c.mu.Unlock()
	}
	return nil
}

// latestRecord names the newest registered version of a workflow, and
// every version in registration order.
type latestRecord struct {
	Latest   string      `json:"latest"`
	Versions []versionAt `json:"versions"`
}

type versionAt struct {
	Version      string    `json:"version"`
	RegisteredAt time.Time `json:"registered_at"`
}

// bumpLatest records version as the workflow's newest, unless the latest
// record has it already.
func (c *Catalog[D]) bumpLatest(ctx context.Context, name, version string) error {
	key := c.h.Keys.WorkflowLatest(name)
	for attempt := 0; attempt < 50; attempt++ {
		rec, ver, err := object.Read[latestRecord](ctx, c.h.Store, key)
		if errors.Is(err, blob.ErrNotFound) {
			rec = &latestRecord{}
		} else if err != nil {
			return err
		}
		for _, v := range rec.Versions {
			if v.Version == version {
				return nil
			}
		}
		rec.Latest = version
		rec.Versions = append(rec.Versions, versionAt{version, c.h.Now()})
		if ver == "" {
			_, err = c.h.Store.Create(ctx, key, object.JSON(rec))
		} else {
			_, err = c.h.Store.Swap(ctx, key, object.JSON(rec), ver)
		}
		if err == nil {
			c.Forget(name)
			c.h.Registered(name)
			return nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) && !errors.Is(err, blob.ErrNotFound) {
			return err
		}
		throttle.Jitter(ctx, attempt)
	}
	return &errs.UnavailableError{Err: fmt.Errorf("workflow %s: too many concurrent registrations", name)}
}

// Definition returns a compiled definition, reading it once per instance.
func (c *Catalog[D]) Definition(ctx context.Context, name, version string) (D, error) {
	id := keys.WorkflowID{Name: name, Version: version}
	c.mu.RLock()
	d, ok := c.defs[id]
	c.mu.RUnlock()
	if ok {
		return d, nil
	}
	var zero D
	w, _, err := object.Read[cairn.Workflow](ctx, c.h.Store, c.h.Keys.Workflow(name, version))
	if errors.Is(err, blob.ErrNotFound) {
		return zero, &errs.NotFoundError{What: "workflow", ID: id.String()}
	}
	if err != nil {
		return zero, err
	}
	d, err = c.h.Compile(*w, "stored")
	if err != nil {
		return zero, fmt.Errorf("stored workflow %s does not compile: %w", id, err)
	}
	c.mu.Lock()
	c.defs[id] = d
	c.mu.Unlock()
	return d, nil
}

// Latest returns the newest registered version of a workflow: from the
// instance's cache when it read it less than LatestTTL ago and no
// registration of the workflow was heard of since, else one read.
func (c *Catalog[D]) Latest(ctx context.Context, name string) (string, error) {
	v, gen, ok := c.latest.get(name, c.h.LatestTTL)
	if ok {
		return v, nil
	}
	v, _, err := c.reads.Do(ctx, fmt.Sprintf("%s\x00%d", name, gen), func(ctx context.Context) (string, error) {
		rec, _, err := object.Read[latestRecord](ctx, c.h.Store, c.h.Keys.WorkflowLatest(name))
		if errors.Is(err, blob.ErrNotFound) {
			return "", &errs.NotFoundError{What: "workflow", ID: name}
		}
		if err != nil {
			return "", err
		}
		c.latest.put(name, rec.Latest, gen)
		return rec.Latest, nil
	})
	return v, err
}

// Forget drops the cached newest version of name: a registration of it
// was heard of (here, or announced by another instance).
func (c *Catalog[D]) Forget(name string) { c.latest.forget(name) }

// List lists registered workflows, by name.
func (c *Catalog[D]) List(ctx context.Context) ([]cairn.WorkflowSummary, error) {
	prefix := c.h.Keys.WorkflowsPrefix()
	objs, err := c.h.Store.ListAll(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := []cairn.WorkflowSummary{}
	for _, o := range objs {
		name, v, _ := strings.Cut(o.Key[len(prefix):], "/")
		if v != "@latest" {
			continue
		}
		rec, _, err := object.Read[latestRecord](ctx, c.h.Store, o.Key)
		if err != nil {
			return nil, err
		}
		s := cairn.WorkflowSummary{Name: name, Latest: rec.Latest, Versions: []string{}}
		for _, v := range rec.Versions {
			s.Versions = append(s.Versions, v.Version)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// latestCache is an instance's cache of workflows' newest versions
// (LatestTTL). A registration heard of (through this instance, or
// announced on the bus) forgets the workflow's entry and bumps the
// generation, so a read that began before it cannot put back the version
// it replaced.
type latestCache struct {
	mu  sync.Mutex
	m   *cache.Cache[string, latestEntry] // bounded: one entry per workflow name started
	gen uint64
}

type latestEntry struct {
	version string
	at      time.Time
}

// get returns name's cached version when it is younger than ttl, and the
// generation a read that misses must hand to put.
func (c *latestCache) get(name string, ttl time.Duration) (string, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return "", c.gen, false
	}
	if x, ok := c.m.Get(name); ok && ttl > 0 && time.Since(x.at) < ttl {
		return x.version, c.gen, true
	}
	return "", c.gen, false
}

// put caches version as name's newest, read at generation gen: unless a
// registration was heard of since.
func (c *latestCache) put(name, version string, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil {
		c.m = cache.New[string, latestEntry](10_000)
	}
	c.m.Put(name, latestEntry{version, time.Now()})
}

// forget drops name's entry: a version of it was registered.
func (c *latestCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if c.m != nil {
		c.m.Delete(name)
	}
}
