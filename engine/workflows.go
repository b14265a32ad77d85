package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/flow"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
	"github.com/cairn-dev/cairn/notify"
)

// definition is a registered workflow with its compiled templates.
type definition struct {
	cairn.Workflow
	templates map[string]*render.Template // by step id
	whens     map[string]*render.Template // the when condition of each conditional step, by step id
	ancestors map[string][]string
	flow      *flow.Plan                  // concurrency, rate limits, priorities (limits.go)
	items     map[string]*render.Template // the items expression of each map step
}

func compile(w cairn.Workflow, field string) (*definition, error) {
	if err := w.Validate(field); err != nil {
		return nil, err
	}
	d := &definition{Workflow: w, templates: map[string]*render.Template{}, whens: map[string]*render.Template{}, ancestors: map[string][]string{}}
	for i, s := range w.Steps {
		t, err := render.Compile(s.Input)
		if err != nil {
			return nil, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].input", field, i), Message: err.Error()}}
		}
		d.templates[s.ID] = t
		if s.When != "" {
			c, err := render.Compile(whenTemplate(s.When))
			if err != nil {
				return nil, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].when", field, i), Message: err.Error()}}
			}
			d.whens[s.ID] = c
		}
		d.ancestors[s.ID] = w.Ancestors(s.ID)
		if s.Items != "" {
			if d.items == nil {
				d.items = map[string]*render.Template{}
			}
			c, err := render.Compile(whenTemplate(s.Items))
			if err != nil {
				return nil, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].items", field, i), Message: err.Error()}}
			}
			d.items[s.ID] = c
		}
	}
	if err := compileOnFailure(d, field); err != nil { // compensate.go
		return nil, err
	}
	plan, err := flow.Compile(w, field)
	if err != nil {
		return nil, err
	}
	d.flow = plan
	return d, nil
}

// defCache holds compiled definitions. Definitions are immutable per
// (name, version), so caching them is always correct.
type defCache struct {
	mu   sync.RWMutex
	defs map[workflowID]*definition
	// registered is the hash of the stored form of each definition this
	// instance registered to the end (stored and recorded in the latest
	// record): registering it again is a no-op, answered without
	// compiling it or reading the bucket. Every worker registers its
	// definitions when it starts, so a fleet of workers of one wide
	// workflow would otherwise read the whole definition once each.
	registered map[workflowID][sha256.Size]byte
}

func newDefCache() *defCache {
	return &defCache{defs: map[workflowID]*definition{}, registered: map[workflowID][sha256.Size]byte{}}
}

// canonical returns a definition's stored form: the same content always
// gives the same bytes, so re-registration can be compared byte for byte.
func canonical(w cairn.Workflow) []byte {
	var v any
	_ = json.Unmarshal(mustJSON(w), &v) // maps marshal with sorted keys
	return mustJSON(v)
}

// RegisterWorkflows stores definitions: new ones create-only, identical
// ones are a no-op, a known (name, version) with other content is a
// ConflictError. It returns the definitions' ids in order.
func (e *Engine) registerWorkflows(ctx context.Context, wfs []cairn.Workflow) error {
	for i, w := range wfs {
		field := fmt.Sprintf("workflows[%d]", i)
		data := canonical(w)
		sum := sha256.Sum256(data)
		id := workflowID{Name: w.Name, Version: w.Version}
		e.defs.mu.RLock()
		known, ok := e.defs.registered[id]
		e.defs.mu.RUnlock()
		if ok && known == sum {
			continue // registered here before, byte for byte
		}
		d, err := compile(w, field)
		if err != nil {
			return err
		}
		key := e.keys.Workflow(w.Name, w.Version)
		_, err = e.store.Create(ctx, key, data)
		switch {
		case err == nil:
			if err := e.bumpLatest(ctx, w.Name, w.Version); err != nil {
				return err
			}
		case errors.Is(err, blob.ErrPreconditionFailed):
			o, err := e.store.Get(ctx, key)
			if err != nil {
				return err
			}
			if !bytes.Equal(o.Data, data) {
				return &ConflictError{Message: fmt.Sprintf("%s: workflow %s version %s is already registered with other content; definitions are immutable, register a new version", field, w.Name, w.Version)}
			}
			// The definition may have been written by a registration that
			// died (or lost its answer) before it recorded the version in
			// the workflow's latest record: finish that write too, or the
			// version could never be started by name nor listed. A version
			// already recorded costs this one read.
			if err := e.bumpLatest(ctx, w.Name, w.Version); err != nil {
				return err
			}
		default:
			return err
		}
		e.defs.mu.Lock()
		e.defs.defs[id] = d
		e.defs.registered[id] = sum
		e.defs.mu.Unlock()
	}
	return nil
}

// registered forgets the cached newest version of a workflow whose
// latest record a registration changed, here and, through the bus, on
// the other instances (a queue bus tells only one of them: there,
// LatestTTL bounds how long the previous version is started).
func (e *Engine) registered(name string) {
	e.latest.forget(name)
	if e.cfg.Bus != nil {
		go e.announce([]notify.Hint{notify.RegistrationNotice(name)})
	}
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

// bumpLatest records version as the workflow's newest, unless the
// latest record has it already.
func (e *Engine) bumpLatest(ctx context.Context, name, version string) error {
	key := e.keys.WorkflowLatest(name)
	for attempt := 0; attempt < 50; attempt++ {
		rec, ver, err := readJSON[latestRecord](ctx, e.store, key)
		if isNotFound(err) {
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
		rec.Versions = append(rec.Versions, versionAt{version, e.now()})
		if ver == "" {
			_, err = e.store.Create(ctx, key, mustJSON(rec))
		} else {
			_, err = e.store.Swap(ctx, key, mustJSON(rec), ver)
		}
		if err == nil {
			e.registered(name)
			return nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) && !isNotFound(err) {
			return err
		}
		throttle.Jitter(ctx, attempt)
	}
	return &UnavailableError{Err: fmt.Errorf("workflow %s: too many concurrent registrations", name)}
}

// definition returns a compiled definition, reading it once per instance.
func (e *Engine) definition(ctx context.Context, name, version string) (*definition, error) {
	id := workflowID{Name: name, Version: version}
	e.defs.mu.RLock()
	d := e.defs.defs[id]
	e.defs.mu.RUnlock()
	if d != nil {
		return d, nil
	}
	w, _, err := readJSON[cairn.Workflow](ctx, e.store, e.keys.Workflow(name, version))
	if isNotFound(err) {
		return nil, &NotFoundError{What: "workflow", ID: id.String()}
	}
	if err != nil {
		return nil, err
	}
	d, err = compile(*w, "stored")
	if err != nil {
		return nil, fmt.Errorf("stored workflow %s does not compile: %w", id, err)
	}
	e.defs.mu.Lock()
	e.defs.defs[id] = d
	e.defs.mu.Unlock()
	return d, nil
}

// latestVersion returns the newest registered version of a workflow:
// from the instance's cache when it read it less than LatestTTL ago and
// no registration of the workflow was heard of since, else one read.
func (e *Engine) latestVersion(ctx context.Context, name string) (string, error) {
	v, gen, ok := e.latest.get(name, e.cfg.LatestTTL)
	if ok {
		return v, nil
	}
	rec, _, err := readJSON[latestRecord](ctx, e.store, e.keys.WorkflowLatest(name))
	if isNotFound(err) {
		return "", &NotFoundError{What: "workflow", ID: name}
	}
	if err != nil {
		return "", err
	}
	e.latest.put(name, rec.Latest, gen)
	return rec.Latest, nil
}

// latestCache is an instance's cache of workflows' newest versions
// (Config.LatestTTL). A registration heard of (through this instance, or
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

// ListWorkflows lists registered workflows.
func (e *Engine) ListWorkflows(ctx context.Context) ([]cairn.WorkflowSummary, error) {
	objs, err := e.store.ListAll(ctx, e.keys.WorkflowsPrefix())
	if err != nil {
		return nil, err
	}
	out := []cairn.WorkflowSummary{}
	for _, o := range objs {
		rest := o.Key[len(e.keys.WorkflowsPrefix()):]
		name, v, _ := cut(rest, "/")
		if v != "@latest" {
			continue
		}
		rec, _, err := readJSON[latestRecord](ctx, e.store, o.Key)
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

// GetWorkflow returns one registered definition: of version, or the
// newest when version is empty.
func (e *Engine) GetWorkflow(ctx context.Context, name, version string) (*cairn.Workflow, error) {
	if err := keys.WorkflowName.Check("name", name); err != nil {
		return nil, err
	}
	if version != "" {
		if err := keys.Version.Check("version", version); err != nil {
			return nil, err
		}
	} else {
		v, err := e.latestVersion(ctx, name)
		if err != nil {
			return nil, err
		}
		version = v
	}
	d, err := e.definition(ctx, name, version)
	if err != nil {
		return nil, err
	}
	w := d.Workflow
	return &w, nil
}

func cut(s, sep string) (string, string, bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
