package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/handoff"
	"github.com/cairn-dev/cairn/engine/internal/hold"
	"github.com/cairn-dev/cairn/engine/internal/hub"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/observe"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/engine/internal/scan"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
	"github.com/cairn-dev/cairn/engine/internal/timer"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/telemetry"
)

// Drain makes every held claim answer now (empty) and every later claim
// answer at once: call it when the process is told to stop, before the
// HTTP server shuts down, so no claim is cut off mid-answer.
func (e *Engine) Drain() {
	e.drainOnce.Do(func() { close(e.draining) })
}

// Claim returns up to req.Max leases, holding the request while nothing
// is ready. It returns early with whatever it got as soon as it got
// anything.
func (e *Engine) Claim(ctx context.Context, req cairn.ClaimRequest) ([]cairn.Lease, error) {
	w, err := e.worker(ctx, req.WorkerID)
	if err != nil {
		return nil, err
	}
	e.seen(w.Rec.ID)
	max := min(100, max(1, req.Max))
	deadline := hold.Until(ctx, min(time.Duration(req.WaitMs)*time.Millisecond, e.ClaimHold()), e.MaxClaimHold())
	skip := &par.Set[string]{} // hints this claim cannot use: read by whichever goroutine adds a hint to the hub (a plain map was a concurrent read and write, which kills the process)
	match := func(h notify.Hint) bool {
		return w.Served[workflowID{Name: h.Workflow, Version: h.Version}] && (req.Run == "" || h.Run == req.Run) && !skip.Has(h.Key())
	}
	wake := make(chan struct{}, 1)
	stop := e.hub.Wait(match, wake)
	defer stop()
	e.cfg.Telemetry.Holding(1) // cairn.claims.waiting
	defer e.cfg.Telemetry.Holding(-1)
	var lastRunScan time.Time
	failures := 0 // consecutive store failures of this claim
	// woke: when each hint taken became claimable (see observeWake).
	woke := map[string]time.Time{}
	for {
		hints, due := e.hub.TakeDue(match, max)
		for i, h := range hints {
			woke[h.Key()] = due[i]
		}
		// A run-scoped claim reads its run every FallbackInterval while it
		// waits (its own hints normally wake it first).
		if req.Run != "" && (lastRunScan.IsZero() || time.Since(lastRunScan) >= e.cfg.FallbackInterval) {
			lastRunScan = time.Now()
			more, err := e.runHints(ctx, req.Run)
			if err != nil {
				return nil, err
			}
			// Through the same filter as the hub's hints: a worker is
			// offered only what it registered, scoped or not.
			for _, h := range more {
				if match(h) {
					hints = append(hints, h)
				}
			}
		}
		if len(hints) > 0 {
			leases, storeFailed, err := e.tryClaim(ctx, w, hints, max, skip, req.Run)
			if len(leases) > 0 || err != nil {
				e.observeWake(leases, woke)
				if err == nil && len(leases) < max && req.Run == "" {
					e.scanBehind()
				}
				return leases, err
			}
			if storeFailed {
				// The hints went back to the hub, which would hand them
				// straight back: wait before trying the bucket again.
				failures++
				if !hold.Sleep(ctx, throttle.ClaimBackoff(failures), deadline, e.draining) {
					return []cairn.Lease{}, nil
				}
				continue
			}
			failures = 0
		}
		if req.Run == "" {
			if n := e.fallbackScan(ctx); n > 0 {
				continue
			}
		}
		if got, woken := e.holdClaim(ctx, w, max, req.Run == "", wake, deadline); len(got) > 0 || !woken {
			return got, nil
		}
	}
}

// holdClaim holds a claim until a hint may have come (woken), up to its
// next fallback scan or its deadline. While it holds, a start on this
// instance may hand it the new run's first attempts, leased in the run's
// first record (open: not a run-scoped claim): they are its answer.
func (e *Engine) holdClaim(ctx context.Context, w cachedWorker, max int, open bool, wake chan struct{}, deadline time.Time) (_ []cairn.Lease, woken bool) {
	var t *handoff.Taker[heldClaim, inlineGrant]
	if open {
		t = e.handoff.Open(heldClaim{w: w}, max, func() { hub.Signal(wake) })
	}
	woken = hold.Await(ctx, wake, deadline, e.cfg.FallbackInterval, e.draining)
	if t != nil {
		if got := e.handoff.Close(t); len(got) > 0 {
			observe.Handed(e.cfg.Telemetry, len(got))
			return e.answerGranted(got), true
		}
	}
	return []cairn.Lease{}, woken
}

// HeldClaims is the number of claims this instance holds now, waiting for
// work.
func (e *Engine) HeldClaims() int {
	n, _ := e.hub.Held()
	return n
}

// AwaitHeldClaims returns once this instance holds at least n waiting
// claims, or ctx ends: a signal for tests and tools that must act while a
// claim is held, instead of sleeping and hoping.
func (e *Engine) AwaitHeldClaims(ctx context.Context, n int) error {
	for {
		got, changed := e.hub.Held()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// runHints reads one run and returns hints for its claimable steps.
func (e *Engine) runHints(ctx context.Context, run string) ([]notify.Hint, error) {
	r, err := e.readRun(ctx, run)
	if err != nil {
		return nil, err
	}
	if r.Status.Terminal() {
		return nil, reject(cairn.ReasonRunTerminal, "run %s has ended (%s)", run, r.Status)
	}
	if r.Status == cairn.RunPaused {
		return nil, nil // its resume hints its ready steps (pause.go)
	}
	out := offerable(r, e.now())
	for i := range out {
		out[i].Priority = e.priorityOf(ctx, r, out[i].Step)
	}
	return out, nil
}

// offerable lists the attempts of r a claim may be offered: ready now,
// and not held by a lease in the record (inline.go).
func offerable(r *runRecord, now time.Time) []notify.Hint {
	var out []notify.Hint
	for id, st := range r.Steps {
		if st.Status == cairn.StepReady && (st.ReadyAt == nil || !st.ReadyAt.After(now)) && st.liveInline() == nil {
			out = append(out, notify.Hint{Run: r.ID, Workflow: r.Workflow, Version: r.Version, Step: id, Attempt: st.Attempt})
		}
	}
	return out
}

// fallbackScan looks in the bucket for claimable work whose notification
// may have been lost, at most once per FallbackInterval per instance
// (scan.Fallback), and returns the hints it added.
func (e *Engine) fallbackScan(ctx context.Context) int {
	return e.fallback.Scan(ctx, e.cfg.FallbackInterval, e.cfg.ActiveCheckInterval+timer.Lead+keys.TimerBucket)
}

// newFallback wires the fallback scan (engine/internal/scan) to the
// engine: a running run's offerable attempts whose lease is absent, or an
// unsettled create of ours that a claim takes over (claimOne).
func newFallback(e *Engine) *scan.Fallback {
	return &scan.Fallback{Lister: e.scan, Rotation: &e.rotation, Host: scan.FallbackHost{
		Now: e.now, Failed: e.outage.Fail, Add: e.hub.Add, Expand: e.timers.Expand,
		Ready: func(ctx context.Context, run string, now time.Time) ([]notify.Hint, func(notify.Hint) string, func(string) int) {
			r, err := e.readRun(ctx, run)
			if err != nil || r.Status != cairn.RunRunning { // ended, or paused
				return nil, nil, nil
			}
			return offerable(r, now), func(h notify.Hint) string { return e.keys.LeaseOf(r.Layout, r.ID, h.Step, h.Attempt) },
				func(step string) int { return e.priorityOf(ctx, r, step) }
		},
		Held: func(h notify.Hint) bool { return e.hub.Holds(h) || e.flow.Holds(h) },
		Unleased: func(ctx context.Context, key string) bool {
			_, err := e.store.Stat(ctx, key)
			return isNotFound(err) || err == nil && e.leases.Unsettled(key)
		},
	}}
}

// scanBehind runs a fallback scan in the background, when one is due, for
// a claim that answers with fewer leases than it asked for: the worker has
// free slots, and work whose hint this instance never got (made ready on
// another instance without a bus, or whose hint died with its instance)
// would otherwise wait until this instance's claims come back empty — with
// a steady trickle of local hints, minutes
// (TestScanWhileLocalHintsTrickle). What it finds goes to the hub, which
// wakes a waiting claim or serves the next one. Once per FallbackInterval
// per instance, as every scan.
// A busy instance's claims answer many times a second, so these scans
// are spaced by at least scanBehindEvery whatever FallbackInterval says:
// each reads up to scanRuns runs and HEADs their ready attempts' leases,
// which on a short FallbackInterval (tests, chaos rounds) loaded the store
// more than the work did.
func (e *Engine) scanBehind() {
	if !e.rotation.Due(e.now(), max(e.cfg.FallbackInterval, scanBehindEvery)) {
		return
	}
	e.flows.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.MaxRequestTime)
		defer cancel()
		e.fallbackScan(ctx)
	})
}

const (
	// scanBehindEvery is the least spacing of scanBehind's scans.
	scanBehindEvery = time.Second
	// scanRuns is how many runs one fallback scan reads (scan.Runs).
	scanRuns = scan.Runs
)

// tryClaim turns hints into leases: per run, one read of the run record,
// then one create-only write per attempt. A hint that is stale is
// dropped; one this claim cannot use yet is put back.
func (e *Engine) tryClaim(ctx context.Context, w cachedWorker, hints []notify.Hint, max int, skip *par.Set[string], scoped string) (_ []cairn.Lease, storeFailed bool, _ error) {
	byRun := map[string][]notify.Hint{}
	var order []string
	for _, h := range hints {
		if _, ok := byRun[h.Run]; !ok {
			order = append(order, h.Run)
		}
		byRun[h.Run] = append(byRun[h.Run], h)
	}
	leases := []cairn.Lease{}
	var putBack []notify.Hint
	var scopedErr error
	for _, run := range order {
		hs := byRun[run]
		if len(leases) >= max || ctx.Err() != nil {
			putBack = append(putBack, hs...)
			continue
		}
		r, cached, err := e.claimRun(ctx, run, hs)
		if err != nil {
			if errs.IsNotFound(err) {
				continue
			}
			putBack = append(putBack, hs...)
			e.outage.Fail("read run", err)
			storeFailed = true
			continue
		}
		e.outage.OK()
		if r.Status.Terminal() {
			if run == scoped {
				scopedErr = reject(cairn.ReasonRunTerminal, "run %s has ended (%s)", run, r.Status)
			}
			continue
		}
		if r.Status == cairn.RunPaused {
			continue // offered to no worker: its resume hints the steps again (pause.go)
		}
		d, err := e.definition(ctx, r.Workflow, r.rev())
		if err != nil {
			putBack = append(putBack, hs...)
			continue
		}
		todo, over := takeHints(hs, max-len(leases))
		putBack = append(putBack, over...)
		res := e.claimSteps(ctx, w, r, d, todo)
		if cached {
			e.claimStale(ctx, w, r, d, todo, res)
		}
		for i, g := range res {
			if g.err != nil {
				e.outage.Fail("create lease", g.err)
				storeFailed = true
				putBack = append(putBack, todo[i])
				continue
			}
			if g.back != nil {
				skip.Add(g.back.Key())
				putBack = append(putBack, *g.back)
			}
			if g.l != nil {
				leases = append(leases, *g.l)
			}
		}
	}
	for _, h := range putBack {
		e.hub.Add(h)
	}
	if len(leases) > 0 && e.cfg.Bus != nil {
		// Tell the other instances these attempts are gone.
		taken := make([]notify.Hint, len(leases))
		for i, l := range leases {
			taken[i] = notify.Hint{Run: l.Run, Workflow: l.Workflow, Version: l.Version, Step: recordStep(&l), Attempt: l.Attempt, Taken: true}
		}
		go e.announce(taken)
	}
	if len(leases) == 0 && scopedErr != nil {
		return nil, storeFailed, scopedErr
	}
	return leases, storeFailed, nil
}

// takeHints returns one hint per step of hs, up to room of them, and the
// ones over that.
func takeHints(hs []notify.Hint, room int) (todo, over []notify.Hint) {
	done := map[string]bool{}
	for _, h := range hs {
		if done[h.Step] {
			continue
		}
		done[h.Step] = true
		if len(todo) >= room {
			over = append(over, h)
			continue
		}
		todo = append(todo, h)
	}
	return todo, over
}

// claimStale decides again, on a fresh read, the hints of todo that were
// not claimable on r, the cached copy, which may be stale (claimRun); res
// are claimSteps' answers on r, replaced in place.
func (e *Engine) claimStale(ctx context.Context, w cachedWorker, r *runRecord, d *definition, todo []notify.Hint, res []claimed) {
	var stale []notify.Hint
	var at []int
	for i, g := range res {
		if g.l == nil && g.back == nil && g.err == nil {
			stale, at = append(stale, todo[i]), append(at, i)
		}
	}
	if len(stale) == 0 {
		return
	}
	fresh, err := e.runs.ReadShared(ctx, r.ID, r.Rev)
	if err != nil {
		return
	}
	for j, g := range e.claimSteps(ctx, w, fresh, d, stale) {
		res[at[j]] = g
	}
}

// claimed is one claimOne's answer.
type claimed struct {
	l    *cairn.Lease
	back *notify.Hint
	err  error
}

// claimSteps runs claimOne for the hints' steps of one run, concurrently:
// each is its own create-only write, so a claim of several leases takes
// about one write's latency, not one per lease.
func (e *Engine) claimSteps(ctx context.Context, w cachedWorker, r *runRecord, d *definition, hs []notify.Hint) []claimed {
	res := make([]claimed, len(hs))
	if len(hs) == 1 {
		res[0].l, res[0].back, res[0].err = e.claimOne(ctx, w, r, d, hs[0].Step)
		return res
	}
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Go(func() { res[i].l, res[i].back, res[i].err = e.claimOne(ctx, w, r, d, h.Step) })
	}
	wg.Wait()
	return res
}

// claimOne tries to lease the current attempt of a step. It returns the
// lease, or a hint to put back for other claims, or neither when the step
// is not claimable (stale hint, someone else holds it).
func (e *Engine) claimOne(ctx context.Context, w cachedWorker, r *runRecord, d *definition, step string) (*cairn.Lease, *notify.Hint, error) {
	st := r.Steps[step]
	s := d.Step(step)
	if st == nil || s == nil || st.Status != cairn.StepReady || st.Attempt == 0 {
		return nil, nil, nil
	}
	if st.liveInline() != nil {
		// Leased in the record by the commit that made it ready
		// (inline.go): every copy in which this attempt is ready says so,
		// so no claimer ever creates its object.
		return nil, nil, nil
	}
	now := e.now()
	h := notify.Hint{Run: r.ID, Workflow: r.Workflow, Version: r.Version, Step: step, Attempt: st.Attempt, Priority: stepPriority(r, d, step)}
	if st.ReadyAt != nil && st.ReadyAt.After(now) {
		h.NotBefore = *st.ReadyAt
		return nil, &h, nil
	}
	if !st.offerableTo(w, s, now) {
		return nil, &h, nil // for another worker
	}
	base := s.ID // the definition's step: step itself, or a map item's map step
	input, vars, item, ok, err := e.claimInput(ctx, r, d, s, step)
	if !ok || err != nil {
		return nil, nil, err
	}
	outputs := vars.Steps
	l := leaseRecord{
		Run: r.ID, Step: step, Attempt: st.Attempt, Worker: w.Rec.ID, Workflow: r.Workflow, Version: r.Version, Def: r.Def,
		Delivery: s.EffectiveDelivery(), State: leaseActive, ClaimedAt: now, ExpiresAt: now.Add(e.cfg.LeaseTTL),
		TraceParent: telemetry.StepTraceParent(r.ID, r.Trace, step, st.Attempt), Nonce: keys.NewNonce(), InputBytes: len(input),
	}
	if len(input) <= KeptInputBytes {
		l.Input = input
	}
	if s.Timeout > 0 {
		t := now.Add(s.Timeout.D())
		l.TimeoutAt = &t
	}
	if ok, back, err := e.acquireFlow(ctx, r, d, step, &l, vars, h); !ok {
		return nil, back, err // flow control (limits.go): not now
	}
	key := e.keys.LeaseOf(r.Layout, r.ID, step, st.Attempt)
	ver, err := e.leases.Create(ctx, key, &l, now)
	if err != nil {
		e.releaseSlots(ctx, &l)
	}
	if errors.Is(err, blob.ErrPreconditionFailed) {
		return nil, nil, nil // another claim won this attempt
	}
	if err != nil {
		return nil, nil, err
	}
	l.Key = key
	e.leases.Remember(&l, ver)
	if l.TimeoutAt != nil {
		// The reaper must look at the run when the attempt times out, not
		// only at its next routine visit. Written after the create, so only
		// the winning claimer pays it.
		if err := e.armAt(ctx, r, *l.TimeoutAt, now); err != nil {
			e.log.Warn("claim: arming the attempt's timeout timer failed; the reaper's routine visit will find it", "run", r.ID, "step", step, "err", err)
		}
	}
	// The state is copied (Answer): r may be the shared cached copy (claimRun).
	a := l.Answer(base, input, outputs, r.State, r.Correlation, e.cfg.HeartbeatInterval, e.cfg.LeaseTTL)
	a.Item, a.History = item, slices.Clip(st.Ops) // append-only: the cached record's next append copies
	a.Resumed, a.Resume, a.Interrupt = st.Resume != nil, st.Resume, st.Interrupt
	return a, nil, nil
}

// offerableTo reports whether the step's attempt may go to worker w now:
// w is not on the attempt's avoid list, and has the labels the step
// requires (label routing). A claim and an inline lease both ask it.
func (st *stepState) offerableTo(w cachedWorker, s *cairn.Step, now time.Time) bool {
	until, avoided := st.Avoid[w.Rec.ID]
	return !(avoided && until.After(now)) && s.LabelsMatch(w.Rec.Labels)
}

// claimInput renders the input of step (s, or an item of map step s) for
// a claim, with the variables it rendered from (flow control keys read
// them). ok is false when the step is not claimable now: its template
// failed (the attempt is failed render_error, or, decided on a cached
// copy, decided again on a fresh read by tryClaim).
func (e *Engine) claimInput(ctx context.Context, r *runRecord, d *definition, s *cairn.Step, step string) (input json.RawMessage, vars render.Vars, item *int, ok bool, err error) {
	vars = e.renderVarsFor(r, d, s.ID)
	vars.Resolve = e.resolver(ctx, r.ID)
	if item, err = e.itemVars(ctx, r, step, &vars); err != nil {
		return nil, vars, nil, false, err
	}
	input, err = d.templates[s.ID].Render(vars)
	if item != nil && len(s.Input) == 0 {
		input, err = vars.Item, nil // a map item without a template gets its element
	}
	switch {
	case err == nil:
		return input, vars, item, true, nil
	case isPayloadReadError(err):
		return nil, vars, nil, false, err // the store failed: not the template's fault
	case !r.fromCache:
		e.failRender(ctx, r.ID, d, step, r.Steps[step].Attempt, fmt.Errorf("template of step %s: %w", step, err))
	}
	return nil, vars, nil, false, nil
}

// failRender fails a step whose input template did not render.
func (e *Engine) failRender(ctx context.Context, run string, d *definition, step string, n int, rerr error) {
	_, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (struct{}, error) {
		st := r.Steps[step]
		if r.Status.Terminal() || st == nil || st.Status != cairn.StepReady || st.Attempt != n {
			return struct{}{}, nil
		}
		e.failAttempt(r, d, step, n, cairn.ErrorInfo{Class: cairn.ClassRenderError, Message: rerr.Error()}, "", false, fx)
		return struct{}{}, nil
	})
	if err != nil {
		e.log.Warn("recording a render error failed", "run", run, "step", step, "err", err)
	}
}
