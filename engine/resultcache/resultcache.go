// Package resultcache is the task steps' result cache: the outputs of
// completed attempts kept in the bucket by a key the step declares (a CEL
// expression over its rendered input), at
//
//	cache/<workflow>/<step>/<sha256 of the key's JSON>
//
// each entry the output, when it was written and the run and attempt
// that computed it. When a step that declares a cache becomes ready, the
// engine reads its entry (one GET) and completes a fresh hit in the same
// run-record write, without a lease or a worker; on a miss the step runs
// and its complete writes the entry after the record commit (one plain
// PUT). Two attempts with one key that miss together both write, and the
// last write wins: any output computed for the key is a valid one.
//
// The cache is bounded: an output over the entry cap (or one stored by
// reference) is not cached, a ttl is at most cairn.MaxCacheTTL, and
// entries are deleted by invalidation (a step's keys, or one) or read as
// misses once stale. It is public under engine/ so the API can serve
// invalidation (Engine.Results).
package resultcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/engine/internal/payload"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// MaxEntry is the largest output cached (also at most the engine's
// inline payload limit: an output stored by reference is not cached).
const MaxEntry = 64 << 10

// Entry is a cached output.
type Entry struct {
	Output    json.RawMessage `json:"output"`
	WrittenAt time.Time       `json:"written_at"`
	Run       string          `json:"run"`
	Attempt   int             `json:"attempt"`
}

// Hit is the entry as a run records it.
func (e *Entry) Hit() *cairn.CacheHit {
	return &cairn.CacheHit{Run: e.Run, Attempt: e.Attempt, WrittenAt: e.WrittenAt}
}

// Cache reads and writes the result cache of one bucket.
type Cache struct {
	b        *blob.Bucket
	prefix   string
	maxEntry int
	now      func() time.Time
}

// New returns the cache kept in b under prefix, whose entries hold
// outputs of at most MaxEntry bytes, and at most inlineMax when it is not
// negative (the engine's inline payload limit).
func New(b *blob.Bucket, prefix string, inlineMax int, now func() time.Time) *Cache {
	c := &Cache{b: b, prefix: prefix + "cache/", maxEntry: MaxEntry, now: now}
	if inlineMax >= 0 {
		c.maxEntry = min(MaxEntry, inlineMax)
	}
	return c
}

var (
	workflowRule = keys.NewRule(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`, 128)
	stepRule     = keys.NewRule(`^[A-Za-z][A-Za-z0-9_-]*$`, 64)
)

// stepPrefix is where a step's entries are.
func (c *Cache) stepPrefix(workflow, step string) (string, error) {
	if err := workflowRule.Check("workflow", workflow); err != nil {
		return "", err
	}
	if err := stepRule.Check("step", step); err != nil {
		return "", err
	}
	return c.prefix + workflow + "/" + step + "/", nil
}

// Digest is the name of a key's entry: the sha256 of its JSON, compacted
// and with object keys sorted, so equal values share an entry.
func Digest(key json.RawMessage) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(key))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("cache key: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cache key: %w", err)
	}
	if len(b) > cairn.MaxCacheKeyBytes {
		return "", fmt.Errorf("cache key: %d bytes, over the %d-byte limit", len(b), cairn.MaxCacheKeyBytes)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Lookup is one step's read: its key's digest, and what was found.
type Lookup struct {
	Step, Digest string
	TTL          time.Duration
	Entry        *Entry // a fresh entry, or nil: a miss
}

// Find reads the entries of ls (one GET each, at once) and sets the
// fresh ones. A missing, stale, unreadable or unavailable entry is a
// miss: the step then runs.
func (c *Cache) Find(ctx context.Context, workflow string, ls []Lookup) {
	par.Each(16, len(ls), func(i int) {
		l := &ls[i]
		p, err := c.stepPrefix(workflow, l.Step)
		if err != nil {
			return
		}
		o, err := c.b.Get(ctx, p+l.Digest)
		var e Entry
		if err != nil || json.Unmarshal(o.Data, &e) != nil || len(e.Output) == 0 {
			return
		}
		if age := c.now().Sub(e.WrittenAt); age < 0 || age >= l.TTL {
			return
		}
		l.Entry = &e
	})
}

// Put writes the entry of step's key digest (a plain PUT: the last writer
// wins). An output over the cap or stored by reference is not cached.
func (c *Cache) Put(ctx context.Context, workflow, step, digest string, e Entry) error {
	if len(e.Output) > c.maxEntry || payload.LooksLikeRef(e.Output) {
		return nil
	}
	p, err := c.stepPrefix(workflow, step)
	if err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = c.b.Put(ctx, p+digest, data, blob.WriteOptions{})
	return err
}

// Invalidate deletes the entry of key (a rendered key, as JSON) of a
// step, or with key nil every entry of the step (listing them), and
// returns how many it deleted (a key's entry counts when it was there).
func (c *Cache) Invalidate(ctx context.Context, workflow, step string, key json.RawMessage) (int, error) {
	p, err := c.stepPrefix(workflow, step)
	if err != nil {
		return 0, err
	}
	if key != nil {
		d, err := Digest(key)
		if err != nil {
			return 0, cairn.ValidationError{{Field: "key", Message: err.Error()}}
		}
		err = c.b.Delete(ctx, p+d)
		if errors.Is(err, blob.ErrNotFound) {
			return 0, nil
		}
		return 1, unavailable(err)
	}
	var n atomic.Int64
	opts := blob.ListOptions{Prefix: p}
	for {
		page, err := c.b.List(ctx, opts)
		if err != nil {
			return int(n.Load()), errs.Unavailable(err)
		}
		var failed atomic.Value
		par.Each(16, len(page.Objects), func(i int) {
			err := c.b.Delete(ctx, page.Objects[i].Key)
			if err == nil {
				n.Add(1)
			} else if !errors.Is(err, blob.ErrNotFound) {
				failed.Store(err)
			}
		})
		if err, _ := failed.Load().(error); err != nil {
			return int(n.Load()), errs.Unavailable(err)
		}
		if page.NextPageToken == "" {
			return int(n.Load()), nil
		}
		opts.PageToken = page.NextPageToken
	}
}

func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return errs.Unavailable(err)
}

// Plan is the compiled caches of a workflow's task steps, by step id;
// nil when none declares one.
type Plan map[string]*planned

type planned struct {
	key *render.Template
	ttl time.Duration
}

// Compile compiles the cache keys of w's steps (field names w in errors).
func Compile(w *cairn.Workflow, field string) (Plan, error) {
	var p Plan
	for i, s := range append(w.Steps[:len(w.Steps):len(w.Steps)], w.OnFailure...) {
		if s.Cache == nil {
			continue
		}
		src := s.Cache.Key
		if src == "" {
			src = "input"
		}
		t, err := render.Compile(render.Expr(src))
		if err != nil {
			where := fmt.Sprintf("%s.steps[%d].cache.key", field, i)
			if i >= len(w.Steps) {
				where = fmt.Sprintf("%s.on_failure[%d].cache.key", field, i-len(w.Steps))
			}
			return nil, cairn.ValidationError{{Field: where, Message: err.Error()}}
		}
		if p == nil {
			p = Plan{}
		}
		p[s.ID] = &planned{key: t, ttl: s.Cache.EffectiveTTL()}
	}
	return p, nil
}

// Has reports whether step declares a cache.
func (p Plan) Has(step string) bool { return p[step] != nil }

// Lookup is the read of step's entry for an attempt whose input renders
// as input() does: ok is false when the step declares no cache, or its
// input or key does not render (the step then runs; its claim reports a
// bad input).
func (p Plan) Lookup(step string, input func() (json.RawMessage, error)) (Lookup, bool) {
	s := p[step]
	if s == nil {
		return Lookup{}, false
	}
	in, err := input()
	if err != nil {
		return Lookup{}, false
	}
	key, err := s.key.Render(render.Vars{Input: in})
	if err != nil {
		return Lookup{}, false
	}
	d, err := Digest(key)
	if err != nil {
		return Lookup{}, false
	}
	return Lookup{Step: step, Digest: d, TTL: min(s.ttl, cairn.MaxCacheTTL)}, true
}
