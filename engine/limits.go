package engine

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

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/notify"
)

// Concurrency limits (docs/ARCHITECTURE.md, "Flow control").
//
// Each limit key has one object, limits/<sha256(scope, key)>, holding the
// attempts that hold a slot under it. A claim adds its attempt by
// compare-and-swap before it creates the lease, so a lease never exists
// without its slot; the slot is removed (CAS) when the attempt ends
// (complete, fail, the reaper's recovery of a lost lease). A slot whose
// attempt ended without its removal (an instance died) is recovered by a
// claim that finds the key full: see holderStale.

// slotGrace is how long a slot may name a lease that does not exist yet
// (its claimer is between the slot write and the lease write) before a
// claim that needs the slot fences the attempt with a tombstone lease.
const slotGrace = 10 * time.Second

// staleCheckEvery bounds how often one instance looks for stale slots
// under one full key (each look reads up to staleCheckMax leases).
const (
	staleCheckEvery = 250 * time.Millisecond
	staleCheckMax   = 8
	slotCASTries    = 24
)

// parkFor is how long a hint whose attempt waits for a concurrency slot
// stays out of the hub when no slot of its key frees on this instance (a
// slot freed on another instance is noticed then).
const parkFor = time.Second

// flowPlan is a definition's compiled flow-control options.
type flowPlan struct {
	steps map[string]*stepFlow // by step id; nil entry: none
}

type stepFlow struct {
	limits   []compiledLimit
	rate     *compiledRate
	priority *int
}

type compiledLimit struct {
	scope string           // what the key is counted within
	field string           // the option's field path, for errors
	key   *render.Template // nil: no key (one limit for the scope)
	limit int
}

type compiledRate struct {
	scope  string
	field  string
	key    *render.Template
	limit  int
	period time.Duration
	burst  int
}

// takesFlow reports whether steps of kind k take flow control's options
// (the root's table, kindOptions: task steps).
func takesFlow(k cairn.StepKind) bool {
	return k.Takes("concurrency") == nil || k.Takes("rate_limit") == nil || k.Takes("priority") == nil
}

// compileFlow compiles the key templates of a workflow's flow options.
func compileFlow(w cairn.Workflow, field string) (*flowPlan, error) {
	p := &flowPlan{steps: map[string]*stepFlow{}}
	keyTemplate := func(k, f string) (*render.Template, error) {
		if k == "" {
			return nil, nil
		}
		t, err := render.Compile(mustJSON(k))
		if err != nil {
			return nil, cairn.ValidationError{{Field: f, Message: err.Error()}}
		}
		return t, nil
	}
	var wf []compiledLimit
	for i, c := range w.Concurrency {
		f := fmt.Sprintf("%s.concurrency[%d]", field, i)
		t, err := keyTemplate(c.Key, f+".key")
		if err != nil {
			return nil, err
		}
		wf = append(wf, compiledLimit{scope: fmt.Sprintf("workflow\x00%s\x00%d", w.Name, i), field: "concurrency[" + fmt.Sprint(i) + "].key", key: t, limit: c.Limit})
	}
	for i, s := range w.Steps {
		if !takesFlow(s.EffectiveKind()) {
			continue
		}
		sf := &stepFlow{priority: s.Priority}
		f := fmt.Sprintf("%s.steps[%d]", field, i)
		if c := s.Concurrency; c != nil {
			t, err := keyTemplate(c.Key, f+".concurrency.key")
			if err != nil {
				return nil, err
			}
			sf.limits = append(sf.limits, compiledLimit{scope: "step\x00" + w.Name + "\x00" + s.ID, field: "concurrency.key", key: t, limit: c.Limit})
		}
		sf.limits = append(sf.limits, wf...)
		if rl := s.RateLimit; rl != nil {
			t, err := keyTemplate(rl.Key, f+".rate_limit.key")
			if err != nil {
				return nil, err
			}
			burst := max(rl.Burst, 1)
			sf.rate = &compiledRate{scope: "step\x00" + w.Name + "\x00" + s.ID, field: "rate_limit.key", key: t, limit: rl.Limit, period: rl.Period.D(), burst: burst}
		}
		if len(sf.limits) > 0 || sf.rate != nil || sf.priority != nil {
			p.steps[s.ID] = sf
		}
	}
	return p, nil
}

// renderKey renders a key template to a string: a string value as is,
// anything else as its JSON text.
func renderKey(t *render.Template, vars render.Vars) (string, error) {
	if t == nil {
		return "", nil
	}
	raw, err := t.Render(vars)
	if err != nil {
		return "", err
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	if len(s) > 1024 {
		return "", fmt.Errorf("rendered key is %d bytes, over the 1024-byte limit", len(s))
	}
	return s, nil
}

// limitObject is the stored state of one concurrency key.
type limitObject struct {
	Scope   string       `json:"scope"`
	Key     string       `json:"key"`
	Holders []slotHolder `json:"holders"`
}

// slotHolder is one attempt holding a slot: enough to find its lease and
// to fence the attempt if the lease never appears.
type slotHolder struct {
	Run      string    `json:"run"`
	Step     string    `json:"step"`
	Attempt  int       `json:"attempt"`
	Tag      string    `json:"tag"` // sha256 of the lease nonce (the nonce is the lease's secret)
	Worker   string    `json:"worker"`
	Workflow string    `json:"workflow"`
	Version  string    `json:"version"`
	At       time.Time `json:"at"`
}

func nonceTag(nonce string) string {
	h := sha256.Sum256([]byte(nonce))
	return hex.EncodeToString(h[:12])
}

func (h slotHolder) is(l *leaseRecord) bool {
	return h.Run == l.Run && h.Step == l.Step && h.Attempt == l.Attempt && h.Tag == nonceTag(l.Nonce)
}

// flowState is an instance's memory of flow control: hints parked until a
// slot of their key frees, and when each full key was last searched for
// stale slots. Only hints: losing it costs latency.
type flowState struct {
	mu      sync.Mutex
	parked  map[string]map[string]notify.Hint // limit object key → hint key → hint
	checked *cache.Cache[string, time.Time]   // limit object key → last stale search (wall clock)
}

func (f *flowState) park(key string, h notify.Hint) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parked == nil {
		f.parked = map[string]map[string]notify.Hint{}
	}
	m := f.parked[key]
	if m == nil {
		if len(f.parked) > 10_000 {
			clear(f.parked) // bounded: parked hints come back after parkFor anyway
		}
		m = map[string]notify.Hint{}
		f.parked[key] = m
	}
	if len(m) < 1000 {
		m[h.Key()] = h
	}
}

// holds reports whether a hint for x's step and attempt (or a later one)
// is parked on any key.
func (f *flowState) holds(x notify.Hint) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.parked {
		if cur, ok := m[x.Key()]; ok && cur.Attempt >= x.Attempt {
			return true
		}
	}
	return false
}

func (f *flowState) unpark(key string) []notify.Hint {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.parked[key]
	delete(f.parked, key)
	out := make([]notify.Hint, 0, len(m))
	for _, h := range m {
		out = append(out, h)
	}
	return out
}

// mayCheck reports whether this instance may search key for stale slots
// now, and records the search.
func (f *flowState) mayCheck(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checked == nil {
		f.checked = cache.New[string, time.Time](10_000)
	}
	now := time.Now()
	if t, ok := f.checked.Get(key); ok && now.Sub(t) < staleCheckEvery {
		return false
	}
	f.checked.Put(key, now)
	return true
}

// acquireFlow applies a step's flow control to a claim about to create
// lease l: the rate limit, then every concurrency limit, recording the
// slots taken in l.Slots. It returns ok when the claim may create the
// lease; otherwise back (when not nil) is the hint to put back, delayed
// until the attempt may be claimable. A key that does not render fails the
// step (render_error) and returns neither.
func (e *Engine) acquireFlow(ctx context.Context, r *runRecord, d *definition, step string, l *leaseRecord, vars render.Vars, h notify.Hint) (ok bool, back *notify.Hint, err error) {
	sf := d.flow.steps[step]
	if sf == nil || len(sf.limits) == 0 && sf.rate == nil {
		return true, nil, nil
	}
	type slotKey struct {
		obj, scope, key string
		limit           int
	}
	var slots []slotKey
	for _, c := range sf.limits {
		k, err := renderKey(c.key, vars)
		if err != nil {
			e.failRender(ctx, r.ID, d, step, l.Attempt, fmt.Errorf("%s of step %s: %w", c.field, step, err))
			return false, nil, nil
		}
		slots = append(slots, slotKey{obj: e.keys.Limit(c.scope, k), scope: c.scope, key: k, limit: c.limit})
	}
	if rl := sf.rate; rl != nil {
		k, err := renderKey(rl.key, vars)
		if err != nil {
			e.failRender(ctx, r.ID, d, step, l.Attempt, fmt.Errorf("%s of step %s: %w", rl.field, step, err))
			return false, nil, nil
		}
		// A grant is spent whatever follows, so do not spend one on an
		// attempt another claim already won.
		if _, err := e.store.Stat(ctx, e.keys.LeaseOf(r.Layout, r.ID, step, l.Attempt)); err == nil {
			return false, nil, nil
		} else if !isNotFound(err) {
			return false, nil, err
		}
		granted, at, err := e.takeRate(ctx, rl, k, l.ClaimedAt)
		if err != nil {
			return false, nil, err
		}
		if !granted {
			h.NotBefore = at
			return false, &h, nil
		}
	}
	holder := slotHolder{Run: r.ID, Step: step, Attempt: l.Attempt, Tag: nonceTag(l.Nonce), Worker: l.Worker, Workflow: r.Workflow, Version: r.Version}
	first := e.now()
	for _, s := range slots {
		got, err := e.takeSlot(ctx, s.obj, s.scope, s.key, s.limit, holder)
		if err == nil && !got {
			e.flow.park(s.obj, h)
			h.NotBefore = e.now().Add(parkFor)
		}
		if err != nil || !got {
			e.releaseSlots(ctx, l)
			l.Slots = nil
			if err != nil {
				return false, nil, err
			}
			return false, &h, nil
		}
		l.Slots = append(l.Slots, s.obj)
	}
	if len(slots) > 0 && e.now().Sub(first) > slotGrace/2 {
		// Too slow: a claim that needs a slot may soon take this one for
		// a dead claimer's. Give the slots back and try again later.
		e.releaseSlots(ctx, l)
		l.Slots = nil
		return false, &h, nil
	}
	return true, nil, nil
}

// takeSlot adds holder to the limit object at key unless limit attempts
// hold it already (after removing stale holders). A lost race re-reads.
func (e *Engine) takeSlot(ctx context.Context, key, scope, name string, limit int, holder slotHolder) (bool, error) {
	for try := 0; try < slotCASTries; try++ {
		obj, ver, err := readJSON[limitObject](ctx, e.store, key)
		if isNotFound(err) {
			obj, ver, err = &limitObject{Scope: scope, Key: clipKey(name)}, "", nil
		}
		if err != nil {
			return false, err
		}
		obj.Holders = slices.DeleteFunc(obj.Holders, func(x slotHolder) bool { return x.Tag == holder.Tag })
		if len(obj.Holders) >= limit {
			stale, err := e.staleHolders(ctx, key, obj.Holders)
			if err != nil {
				return false, err
			}
			if len(stale) == 0 {
				return false, nil
			}
			obj.Holders = slices.DeleteFunc(obj.Holders, func(x slotHolder) bool { return stale[x.Tag] })
			if len(obj.Holders) >= limit {
				return false, nil
			}
		}
		holder.At = e.now() // the lease write must follow within slotGrace
		obj.Holders = append(obj.Holders, holder)
		if ver == "" {
			_, err = e.store.Create(ctx, key, mustJSON(obj))
		} else {
			_, err = e.store.Swap(ctx, key, mustJSON(obj), ver)
		}
		if err == nil {
			return true, nil
		}
		if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrConflict) {
			sleepJitter(ctx, try/4)
			continue
		}
		// Unknown outcome: the write may have landed.
		if got, _, rerr := readJSON[limitObject](ctx, e.store, key); rerr == nil {
			if slices.ContainsFunc(got.Holders, func(x slotHolder) bool { return x.Tag == holder.Tag }) {
				return true, nil
			}
		}
		if !blob.IsRetryable(err) {
			return false, err
		}
		sleepJitter(ctx, try)
	}
	return false, nil // contended: the hint comes back after parkFor
}

func clipKey(k string) string {
	if len(k) > 256 {
		return k[:256] + "…"
	}
	return k
}

// staleHolders returns the tags of holders whose attempts hold no live
// lease, looking at the oldest staleCheckMax at most, at most once per
// staleCheckEvery per key on this instance.
func (e *Engine) staleHolders(ctx context.Context, key string, hs []slotHolder) (map[string]bool, error) {
	if !e.flow.mayCheck(key) {
		return nil, nil
	}
	sorted := slices.Clone(hs)
	slices.SortFunc(sorted, func(a, b slotHolder) int { return a.At.Compare(b.At) })
	stale := map[string]bool{}
	for i, h := range sorted {
		if i == staleCheckMax {
			break
		}
		ok, err := e.holderStale(ctx, h)
		if err != nil {
			return nil, err
		}
		if ok {
			stale[h.Tag] = true
		}
	}
	return stale, nil
}

// holderStale decides whether a slot's attempt is over. Its lease:
//   - belongs to another claim (other nonce), or is fenced: stale;
//   - is active past its expiry and the recovery window, or past its
//     timeout: fenced here as the reaper would (the reaper then applies
//     the loss to the run), stale;
//   - does not exist and the slot is older than slotGrace (its claimer
//     died between the slot write and the lease write): a tombstone lease,
//     already expired, is created for the attempt, so the claimer's late
//     create can never land; the reaper then re-queues the attempt as
//     lost. Stale.
//
// A live lease (active, not expired) is never stale: its slot frees when
// the attempt ends.
func (e *Engine) holderStale(ctx context.Context, h slotHolder) (bool, error) {
	for range 3 {
		now := e.now()
		l, ver, key, err := e.readLeaseAt(ctx, h.Run, h.Step, h.Attempt)
		if l != nil {
			l.key = key
		}
		if isNotFound(err) {
			if now.Sub(h.At) < slotGrace {
				return false, nil
			}
			key, kerr := e.leaseKeyOfRun(ctx, h.Run, h.Step, h.Attempt)
			if kerr != nil {
				return false, kerr
			}
			tomb := leaseRecord{Run: h.Run, Step: h.Step, Attempt: h.Attempt, Worker: h.Worker, Workflow: h.Workflow, Version: h.Version,
				Delivery: cairn.AtLeastOnce, State: leaseExpired, ExpiredWhy: "expired", ClaimedAt: h.At, ExpiresAt: h.At, Nonce: newNonce()}
			_, err := e.store.Create(ctx, key, mustJSON(tomb))
			if err == nil {
				e.log.Info("concurrency slot recovered: its claim died before writing the lease", "run", h.Run, "step", h.Step, "attempt", h.Attempt)
				e.recoverNow(ctx, &tomb)
				return true, nil
			}
			if errors.Is(err, blob.ErrPreconditionFailed) {
				continue // the lease appeared: look at it
			}
			return false, err
		}
		if err != nil {
			return false, err
		}
		if nonceTag(l.Nonce) != h.Tag || l.State != leaseActive {
			return true, nil
		}
		why := ""
		switch {
		case l.TimeoutAt != nil && !now.Before(*l.TimeoutAt):
			why = "timeout"
		case !now.Before(l.ExpiresAt.Add(e.cfg.RecoveryWindow)):
			why = "expired"
		}
		if why == "" {
			return false, nil
		}
		err = e.fence(ctx, l, ver, why)
		if errors.Is(err, blob.ErrPreconditionFailed) {
			continue // a heartbeat won, or someone fenced it: look again
		}
		if err == nil {
			e.recoverNow(ctx, l)
		}
		return err == nil, err
	}
	return false, nil
}

// recoverNow applies a lease this claim fenced to its run, as the
// reaper's next visit would (which stays the fallback when this fails):
// the attempt is re-queued or failed at once rather than at the run's
// next routine visit. Then it frees the lease's slots under its other
// keys.
func (e *Engine) recoverNow(ctx context.Context, l *leaseRecord) {
	d, err := e.definition(ctx, l.Workflow, l.Version)
	if err == nil {
		err = e.recoverAttempt(ctx, l.Run, d, l, l.ExpiredWhy, &ReapStats{})
	}
	if err != nil && !isNotFoundErr(err) {
		e.log.Warn("applying a fenced lease to its run failed; the reaper will", "run", l.Run, "step", l.Step, "attempt", l.Attempt, "err", err)
		return
	}
	e.releaseSlots(ctx, l)
}

// releaseSlots removes lease l's attempt from every limit object it holds
// a slot in, and wakes the claims of this instance parked on those keys.
// Safe to call more than once, and for leases that hold no slot.
func (e *Engine) releaseSlots(ctx context.Context, l *leaseRecord) {
	if l == nil || len(l.Slots) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, key := range l.Slots {
		if err := e.releaseSlot(ctx, key, l); err != nil {
			// The slot is recovered when a claim finds the key full and
			// the lease ended (holderStale).
			e.log.Warn("releasing a concurrency slot failed; it is recovered once the lease is seen ended", "run", l.Run, "step", l.Step, "attempt", l.Attempt, "err", err)
		}
		for _, h := range e.flow.unpark(key) {
			h.NotBefore = time.Time{}
			e.hub.Add(h)
		}
	}
}

func (e *Engine) releaseSlot(ctx context.Context, key string, l *leaseRecord) error {
	for try := 0; ; try++ {
		obj, ver, err := readJSON[limitObject](ctx, e.store, key)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		n := len(obj.Holders)
		obj.Holders = slices.DeleteFunc(obj.Holders, func(x slotHolder) bool { return x.is(l) })
		if len(obj.Holders) == n {
			return nil
		}
		_, err = e.store.Swap(ctx, key, mustJSON(obj), ver)
		if err == nil {
			return nil
		}
		if try >= slotCASTries || !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) {
			return err
		}
		sleepJitter(ctx, try/4)
	}
}

// attemptEnded frees the slots of a lease whose complete or fail was
// answered: applied, or refused because the attempt was already over.
func (e *Engine) attemptEnded(ctx context.Context, l *leaseRecord, err error) {
	if l == nil || len(l.Slots) == 0 {
		return
	}
	if err != nil {
		reason, ok := IsRejection(err)
		if !ok || reason != cairn.ReasonAlreadyApplied && reason != cairn.ReasonFenced && reason != cairn.ReasonRunTerminal {
			return // the attempt goes on (or the store failed: nothing known)
		}
	}
	e.releaseSlots(ctx, l)
}

// skipSet is the set of hints one claim cannot use. The claim's match
// function reads it from whichever goroutine adds a hint to the hub (a
// put-back, a freed slot, the bus), while the claim adds to it: so it is
// guarded. (A plain map here was a concurrent map read and write, which
// kills the process; parked hints made it frequent.)
type skipSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *skipSet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

func (s *skipSet) add(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	s.m[k] = true
}

// leaseKeyOfRun is where a lease of run is created: in the run's key
// layout (layout.go), from the cached record or, failing that, a read. A
// run that is gone answers the engine's own layout.
func (e *Engine) leaseKeyOfRun(ctx context.Context, run, step string, attempt int) (string, error) {
	r := e.sharedRun(run, 0) // read only
	if r == nil {
		var err error
		if r, err = e.readRun(ctx, run); isNotFound(err) || isNotFoundErr(err) {
			return e.keys.Lease(run, step, attempt), nil
		} else if err != nil {
			return "", err
		}
	}
	return e.keys.LeaseOf(r.Layout, r.ID, step, attempt), nil
}
