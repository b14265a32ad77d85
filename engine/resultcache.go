package engine

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/resultcache"
	"github.com/cairn-dev/cairn/notify"
)

// fromCache completes, in the write being decided, the steps it made
// ready that declare a result cache whose key has a fresh entry
// (engine/resultcache): no lease, no worker. A miss keeps the key's
// digest on the step, for its complete to write the entry.
func (e *Engine) fromCache(ctx context.Context, r *runRecord, d *definition, fx *effects) {
	for hit := true; hit && len(d.results) > 0 && !r.Status.Terminal(); {
		var ls []resultcache.Lookup
		for _, h := range fx.hints {
			if st := r.Steps[h.Step]; st != nil && st.Status == cairn.StepReady && st.CacheKey == "" && d.results.Has(h.Step) {
				if l, ok := d.results.Lookup(h.Step, func() (json.RawMessage, error) {
					vars := e.renderVarsFor(r, d, h.Step)
					vars.Resolve = e.resolver(ctx, r.ID)
					return d.templates[h.Step].Render(vars)
				}); ok {
					ls = append(ls, l)
				}
			}
		}
		e.results.Find(ctx, r.Workflow, ls)
		hit = false
		for _, l := range ls {
			st := r.Steps[l.Step]
			if l.Entry == nil {
				st.CacheKey = l.Digest // a miss: the step runs, and its complete writes the entry
				continue
			}
			st.Status, st.Output, st.CompletedBy, st.ReadyAt, st.Cached = cairn.StepCompleted, l.Entry.Output, st.Attempt, nil, l.Entry.Hit()
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepCompleted, Step: l.Step, Attempt: st.Attempt, Cached: st.Cached})
			fx.hints = slices.DeleteFunc(fx.hints, func(h notify.Hint) bool { return h.Step == l.Step }) // no worker
			hit = true
		}
		if hit {
			e.advance(r, d, fx)
		}
	}
}

// cacheOutput writes the entry of a cached step that missed, once the
// complete that computed its output (attempt n) has committed.
func (e *Engine) cacheOutput(r *runRecord, step string, n int, st *stepState, fx *effects) {
	ent, wf, key := resultcache.Entry{Output: st.Output, WrittenAt: fx.now, Run: r.ID, Attempt: n}, r.Workflow, st.CacheKey
	e.inBackground(fx, r.ID, step, "writing a result cache entry failed", func(ctx context.Context) error {
		return e.results.Put(ctx, wf, step, key, ent)
	})
}
