package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/attrs"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/handoff"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/list"
	"github.com/cairn-dev/cairn/engine/internal/mapstep"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
	"github.com/cairn-dev/cairn/engine/internal/trigger"
	"github.com/cairn-dev/cairn/telemetry"
)

// newRunID returns a run id that sorts newest first: a ULID whose time is
// inverted, so a bucket listing of runs/ starts with the latest runs.
func newRunID(now time.Time) string {
	inv := ulid.MaxTime() - ulid.Timestamp(now)
	return ulid.MustNew(inv, rand.Reader).String()
}

// StartRun starts a run of a workflow.
//
// While the store refuses a share of this instance's writes for rate, a
// share of starts is refused before anything is written (admission.go):
// UnavailableError, answered 503 with Retry-After. A start with an
// idempotency key is refused the same way: its retry is the same start.
func (e *Engine) StartRun(ctx context.Context, req cairn.StartRequest) (*cairn.StartResult, error) {
	if e.admit.Shed(e.now()) {
		if err := e.checkStartTarget(req.Workflow, req.Version, req.Input); err != nil {
			return nil, err // bad input is a 4xx whatever the store does
		}
		if p, log := e.admit.NoteShed(e.now()); log {
			e.log.Warn("shedding new runs: the store is refusing this instance's writes for rate; starts are answered 503", "share", fmt.Sprintf("%.0f%%", 100*p))
		}
		return nil, &UnavailableError{Err: errShed}
	}
	return e.startRun(ctx, req, nil)
}

// checkStartTarget checks what a start names: a workflow, an optional
// version, and an input that is JSON within the size limit. Starts and
// schedules (which start runs later) check the same.
func (e *Engine) checkStartTarget(workflow, version string, input json.RawMessage) error {
	if err := keys.WorkflowName.Check("workflow", workflow); err != nil {
		return err
	}
	if version != "" {
		if err := keys.Version.Check("version", version); err != nil {
			return err
		}
	}
	if len(input) > 0 && !json.Valid(input) {
		return cairn.ValidationError{{Field: "input", Message: "not valid JSON"}}
	}
	if len(input) > e.cfg.MaxOutputBytes {
		return cairn.ValidationError{{Field: "input", Message: fmt.Sprintf("%d bytes, over the %d-byte limit", len(input), e.cfg.MaxOutputBytes)}}
	}
	return nil
}

// startRun is StartRun; seed, when not nil, fills the new record (whose
// steps are all pending) before the run first advances: a rerun marks the
// steps it reuses.
func (e *Engine) startRun(ctx context.Context, req cairn.StartRequest, seed func(r *runRecord, d *definition, now time.Time)) (*cairn.StartResult, error) {
	if err := e.checkStartTarget(req.Workflow, req.Version, req.Input); err != nil {
		return nil, err
	}
	// A start is bounded by MaxRequestTime wherever it is called from: the
	// reaper keeps a timer whose run does not exist yet for twice that
	// (timer.Index.OrphanGrace), so the record a start writes after its
	// timer finds the timer still there.
	ctx, cancel := context.WithTimeout(ctx, e.cfg.MaxRequestTime)
	defer cancel()
	version := req.Version
	if version == "" {
		v, err := e.latestVersion(ctx, req.Workflow)
		if err != nil {
			return nil, err
		}
		version = v
	}
	d, err := e.definition(ctx, req.Workflow, version)
	if err != nil {
		return nil, err
	}
	if err := cairn.CheckPriority(req.Priority); err != nil {
		return nil, &InvalidError{Field: "priority", Message: err.Error()}
	}
	if err := req.Budget.Check("budget"); err != nil {
		return nil, err
	}
	if err := attrs.Check(req.Attributes, "attributes"); err != nil {
		return nil, err
	}
	now := e.now()
	id, existing, err := e.startID(ctx, req, d, now)
	if existing != nil || err != nil {
		return existing, err
	}
	if existing, err := e.singleton(ctx, req, d, id); existing != nil || err != nil {
		return existing, err // limits.go
	}
	if err := trigger.ArmCancels(ctx, e.store, e.keys, d.events.CancelEvents(), id); err != nil {
		return nil, err // events.go: cancel_on
	}
	r := e.newRunRecord(ctx, req, d, id, now)
	fx := &effects{now: now}
	if err := e.setAttrs(r, req.Attributes, fx); err != nil {
		return nil, err
	}
	if seed != nil {
		seed(r, d, now)
	}
	if err := e.externalizeStart(ctx, r); err != nil { // payloads before the record
		return nil, err
	}
	var handed *handoff.Offered[heldClaim, inlineGrant]
	if !e.checkDeadline(r, now) {
		e.advance(r, d, fx)
		e.fromCache(ctx, r, d, fx)
		handed = e.handToHeldClaim(r, d, fx) // inline.go
	}
	err = e.createRun(ctx, r, fx, req.IdempotencyKey != "")
	e.handedOff.Add(int64(handed.Settle(err == nil)))
	if errors.Is(err, errRunExists) && req.IdempotencyKey != "" {
		// A concurrent start with the same key finished it first.
		existing, err := e.readRun(ctx, id)
		if err != nil {
			return nil, err
		}
		return &cairn.StartResult{Run: e.view(existing, d), Existed: true}, nil
	}
	if errors.Is(err, errRunExists) {
		return nil, errs.Unavailable(blob.ErrPreconditionFailed)
	}
	if err != nil {
		return nil, err
	}
	return &cairn.StartResult{Run: e.view(r, d)}, nil
}

// startID is the id of the run a start makes: a new one, or with an
// idempotency key the one the key names, whose run is answered as it
// stands (existing) when it was written. A start that died between the
// key and the run is finished under the key's id.
func (e *Engine) startID(ctx context.Context, req cairn.StartRequest, d *definition, now time.Time) (string, *cairn.StartResult, error) {
	id := newRunID(now)
	if req.IdempotencyKey == "" {
		return id, nil, nil
	}
	ikey := e.keys.Idempotency(req.Workflow, req.IdempotencyKey)
	_, err := e.store.Create(ctx, ikey, []byte(id))
	if !errors.Is(err, blob.ErrPreconditionFailed) {
		return id, nil, err
	}
	o, err := e.store.Get(ctx, ikey)
	if err != nil {
		return "", nil, err
	}
	id = string(o.Data)
	r, err := e.readRun(ctx, id)
	if err == nil {
		return id, &cairn.StartResult{Run: e.view(r, d), Existed: true}, nil
	}
	if !isNotFound(errors.Unwrap(err)) && !errs.IsNotFound(err) {
		return "", nil, err
	}
	return id, nil, nil // the first start died between the key and the run: finish it
}

// newRunRecord is the record of a run req starts, its steps pending.
func (e *Engine) newRunRecord(ctx context.Context, req cairn.StartRequest, d *definition, id string, now time.Time) *runRecord {
	r := &runRecord{
		ID: id, Workflow: req.Workflow, Version: d.Version, Status: cairn.RunRunning,
		Input: req.Input, State: map[string]json.RawMessage{}, Correlation: req.Correlation,
		IdempotencyKey: req.IdempotencyKey, CreatedAt: now, UpdatedAt: now, Trace: telemetry.ParentOf(ctx),
		Steps: map[string]*stepState{}, Journal: []cairn.JournalEntry{}, Layout: e.keys.Name(), Priority: req.Priority,
		Budget: cmp.Or(req.Budget, d.Budget),
	}
	if e.cfg.ReplaceDefinitions {
		r.Def = d.sum
	}
	for k, v := range req.State {
		r.State[k] = v
	}
	if req.Deadline != nil {
		t := req.Deadline.UTC()
		r.Deadline = &t
	} else if d.Deadline > 0 {
		t := now.Add(d.Deadline.D())
		r.Deadline = &t
	}
	for _, s := range d.Steps {
		r.Steps[s.ID] = &stepState{Status: cairn.StepPending}
	}
	armCompensation(r, d) // compensate.go
	r.journal(now, cairn.JournalEntry{Type: cairn.JournalRunStarted, Message: req.Workflow + "@" + d.Version})
	return r
}

// setAttrs merges patch into r's search attributes in the commit that
// writes r (engine/internal/attrs): the index entries of new values are
// written before the record, those of the values they replace deleted
// once it landed (a leftover of a failure is skipped by queries and
// deleted by them).
func (e *Engine) setAttrs(r *runRecord, patch map[string]json.RawMessage, fx *effects) error {
	next, puts, dels, err := attrs.Apply(e.keys, r.ID, r.Attrs, patch, r.Rev+1, "attributes")
	if err != nil || len(patch) == 0 {
		return err
	}
	r.Attrs = next
	for _, k := range puts {
		fx.writes = append(fx.writes, mapstep.PreWrite{Key: k})
	}
	if len(dels) > 0 {
		e.inBackground(fx, r.ID, "", "deleting replaced attribute index entries failed; queries delete them", func(ctx context.Context) error { return attrs.Delete(ctx, e.store, dels) })
	}
	return nil
}

// errRunExists: createRun found the run's record written (by a
// concurrent start under the same idempotency key).
var errRunExists = errors.New("the run record exists")

// createRun writes a new run record at revision 1 in the committer's
// order (commit.go): its timer before the record (a record without its
// timer would not be found by the reaper if this process died between
// the two), the objects the record refers to, then the record, create-
// only; then the cache and the effects. It returns errRunExists when the
// record was there, else the store's errors as unavailable. Each is written once per start:
// a write the store refuses for rate is retried here with the same id and
// the same timer, so a throttled start does not leave one timer per
// client retry (docs/DECISIONS.md 14.2). keyed says
// an idempotency key names the id (then a refused start keeps its timer:
// the key's next start needs it).
func (e *Engine) createRun(ctx context.Context, r *runRecord, fx *effects, keyed bool) error {
	r.Rev = 1
	var timerKey string
	retriedTimer, err := throttle.Retry(ctx, &e.startRetry, startRetries, startRetryBase, blob.IsRetryable, func() (err error) {
		timerKey, err = e.armTimer(ctx, r, fx.now) // when the run needs one
		if timerKey != "" || err != nil {
			e.admit.Saw(e.now(), err)
		}
		return err
	})
	if err != nil {
		return errs.Unavailable(err)
	}
	if err := mapstep.Put(ctx, e.store, fx.writes); err != nil { // a map's items (mapstep.go)
		return errs.Unavailable(err)
	}
	data := object.JSON(r)
	var v blob.Version
	retriedCreate, err := throttle.Retry(ctx, &e.startRetry, startRetries, startRetryBase, blob.IsRetryable, func() (err error) {
		v, err = e.store.Create(ctx, e.keys.Run(r.ID), data)
		e.admit.Saw(e.now(), err)
		return err
	})
	if err == nil && !retriedTimer && !retriedCreate {
		e.startRetry.Earn()
	}
	if err != nil && blob.IsRetryable(err) && timerKey != "" && !keyed && !e.timers.IsGroup(timerKey) {
		// Refused: nothing was written, and the id is this request's
		// alone (no idempotency key names it), so no run will ever need
		// the timer. Best effort: one the store refuses to delete, and a
		// group timer (other runs' too), the reaper deletes.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if derr := e.store.Delete(dctx, timerKey); derr != nil {
			e.log.Debug("start: deleting the timer of a refused start failed; the reaper deletes it", "run", r.ID, "err", derr)
		}
		cancel()
	}
	if errors.Is(err, blob.ErrPreconditionFailed) {
		return errRunExists
	}
	if err != nil {
		return errs.Unavailable(err)
	}
	e.commits.Created(r.ID, data, v, r.Rev)
	fx.run = r // for observe; rev stays 0: no change notice for a new run
	e.afterCommit(fx)
	return nil
}

// startRetries is how often a start retries a write the store refused
// for rate (throttled, or a conflicting concurrent write) before it
// answers unavailable: up to 3 retries after 100–200, 200–400 and
// 400–800 ms, while the instance's retry budget lasts.
const startRetries = 3

// startRetryBase is the first retry's backoff (a variable for tests).
var startRetryBase = 100 * time.Millisecond

// view is the API's view of a run record: steps in definition order (by
// id without the definition), without the engine's bookkeeping. Holders
// are read from leases by GetRun.
func (e *Engine) view(r *runRecord, d *definition) *cairn.Run {
	v := &cairn.Run{
		ID: r.ID, Workflow: r.Workflow, Version: r.Version, Status: r.Status, Input: r.Input, State: r.State,
		Correlation: r.Correlation, Attributes: r.Attrs.View(), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt,
		Deadline: r.Deadline, Output: r.Output, Error: r.Error, Usage: r.Usage, Budget: r.Budget, Steps: []cairn.StepView{}, PendingEvents: []string{}, RerunOf: r.RerunOf,
		ContinuedAs: r.ContinuedAs, ContinuedFrom: r.ContinuedFrom,
		Priority: r.Priority, Event: r.Event,
	}
	v.StepsDone, v.StepsTotal = stepCounts(r)
	if r.Parent != nil {
		v.Parent, v.ParentStep = r.Parent.Run, r.Parent.Step
	}
	v.Compensation = compView(r)
	order := stepOrder(r, d)
	kindOfStep := map[string]cairn.StepKind{}
	eventOfStep := map[string]string{}
	if d != nil {
		for _, s := range slices.Concat(d.Steps, d.OnFailure) {
			kindOfStep[s.ID] = s.EffectiveKind()
			eventOfStep[s.ID] = s.WaitLabel()
		}
	}
	for _, id := range order {
		st := r.Steps[id]
		if st == nil {
			continue
		}
		v.Steps = append(v.Steps, cairn.StepView{
			ID: id, Kind: kindOfStep[id], Status: st.Status, Attempt: st.Attempt, Failures: st.Failures,
			ReadyAt: st.ReadyAt, WakeAt: st.WakeAt, Output: st.Output, Error: st.Error, Usage: st.Usage, Attempts: append([]cairn.Attempt{}, st.Attempts...),
			Event: eventOfStep[id], Cached: st.Cached,
			Map: st.Map.Progress(), Child: childOf(st), Operations: st.Ops, Interrupt: st.Interrupt, Resume: st.Resume, Visits: st.visits(),
		})
	}
	for _, ev := range r.Events {
		v.PendingEvents = append(v.PendingEvents, ev.Name)
	}
	return v
}

// GetRun returns a run.
func (e *Engine) GetRun(ctx context.Context, id string) (*cairn.Run, error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, err
	}
	r, err := e.readRun(ctx, id)
	if err != nil {
		return nil, err
	}
	d, err := e.definition(ctx, r.Workflow, r.rev())
	if err != nil {
		d = nil // the view works without the definition
	}
	v := e.view(r, d)
	v.NoLiveWorker = e.noLiveWorker(ctx, r) // see liveness.go
	// Ready steps may be held: their leases say by whom.
	var held []stepAttempt
	var at []int
	for i := range v.Steps {
		s := &v.Steps[i]
		if s.Status != cairn.StepReady || s.Attempt == 0 || r.Status.Terminal() {
			continue
		}
		held, at = append(held, stepAttempt{s.ID, s.Attempt}), append(at, i)
	}
	leases, err := e.readLeases(ctx, r, held)
	if err != nil {
		return nil, err
	}
	for j, l := range leases {
		if l != nil && l.State == leaseActive {
			v.Steps[at[j]].Holder = l.Holder()
		}
	}
	if err := e.resolveView(ctx, v, d); err != nil {
		return nil, err
	}
	return v, nil
}

// resolveView resolves the payload references of v, a view of a run of
// definition d (nil: unknown), up to ViewResolveBytes: what every view
// of a whole run answers (payloads.go).
func (e *Engine) resolveView(ctx context.Context, v *cairn.Run, d *definition) error {
	return e.payloads.ResolveView(ctx, v, d != nil && len(d.Sinks()) > 1, e.cfg.ViewResolveBytes)
}

// stepAttempt names one attempt of a step.
type stepAttempt struct {
	step    string
	attempt int
}

// leaseReads is how many leases a run view reads at once.
const leaseReads = 32

// readLeases reads the leases of the attempts of run r, leaseReads at a
// time (a 10,000-wide fan-out's view was 10,000 reads one after another:
// minutes on S3); a lease not (or no longer) in the bucket is nil.
func (e *Engine) readLeases(ctx context.Context, r *runRecord, attempts []stepAttempt) ([]*leaseRecord, error) {
	out := make([]*leaseRecord, len(attempts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(leaseReads)
	for i, a := range attempts {
		g.Go(func() error {
			l, _, err := readJSON[leaseRecord](gctx, e.store, e.keys.LeaseOf(r.Layout, r.ID, a.step, a.attempt))
			if isNotFound(err) {
				if il := r.Steps[a.step].liveInline(); il != nil && il.Attempt == a.attempt {
					out[i] = e.inlineRecord(r, a.step, il) // held in the record (inline.go)
				}
				return nil
			}
			out[i] = l
			return err
		})
	}
	return out, g.Wait()
}

// ListRequest filters and pages a run listing.
type ListRequest = list.Request

// ListRuns lists runs newest first. A filtered listing's page may be
// short and have a cursor: what one listing reads is bounded (list.Runs).
func (e *Engine) ListRuns(ctx context.Context, req ListRequest) (*cairn.RunPage, error) {
	rows, next, err := e.ListRunRows(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &cairn.RunPage{Runs: make([]cairn.RunSummary, 0, len(rows)), NextCursor: next}
	for _, r := range rows {
		out.Runs = append(out.Runs, r.RunSummary)
	}
	return out, nil
}

// RunRow is a run in a listing with what the dashboard shows besides the
// API's summary.
type RunRow = list.Row

// ListRunRows is ListRuns with each run's correlation and cost, and the
// next cursor ("" on the last page); engine/internal/list pages it.
func (e *Engine) ListRunRows(ctx context.Context, req ListRequest) ([]RunRow, string, error) {
	return list.Runs(ctx, list.Host{Scan: e.scan, Row: e.listedRow, Now: e.now, Grace: 2 * e.cfg.MaxRequestTime}, req)
}

// cursorRefused tells whether a listing failed because of its page token
// rather than the store (scan.Lister.CursorRefused).
func (e *Engine) cursorRefused(ctx context.Context, opts blob.ListOptions, err error) bool {
	return e.scan.CursorRefused(ctx, opts, err)
}

// Journal returns what happened to a run, oldest first, with the attempts
// that are running now (read from their leases).
func (e *Engine) Journal(ctx context.Context, id string) ([]cairn.JournalEntry, error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, err
	}
	r, err := e.readRun(ctx, id)
	if err != nil {
		return nil, err
	}
	entries := append([]cairn.JournalEntry{}, r.Journal...)
	if !r.Status.Terminal() {
		var held []stepAttempt
		for step, st := range r.Steps {
			if st.Status == cairn.StepReady && st.Attempt > 0 {
				held = append(held, stepAttempt{step, st.Attempt})
			}
		}
		leases, err := e.readLeases(ctx, r, held)
		if err != nil {
			return nil, err
		}
		for j, l := range leases {
			if l == nil {
				continue
			}
			step := held[j].step
			entries = append(entries, cairn.JournalEntry{At: l.ClaimedAt, Type: cairn.JournalStepClaimed, Step: step, Attempt: l.Attempt, Worker: l.Worker})
			if l.StartedAt != nil {
				entries = append(entries, cairn.JournalEntry{At: *l.StartedAt, Type: cairn.JournalStepStarted, Step: step, Attempt: l.Attempt, Worker: l.Worker})
			}
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].At.Before(entries[j].At) })
	return entries, nil
}

// CancelRun cancels a running run. Workers holding its leases learn it on
// their next heartbeat or complete (run_terminal).
func (e *Engine) CancelRun(ctx context.Context, id, reason string) (*cairn.Run, error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, err
	}
	r, err := mutate(ctx, e.commits, id, func(r *runRecord, fx *effects) (*runRecord, error) {
		if r.Status.Terminal() {
			return nil, &ConflictError{Message: fmt.Sprintf("run %s already ended: %s", id, r.Status)}
		}
		msg := "cancelled"
		if reason != "" {
			msg = "cancelled: " + reason
		}
		e.endRun(r, cairn.RunCancelled, &cairn.ErrorInfo{Class: cairn.ClassCancelled, Message: msg}, fx.now, reason)
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	d, _ := e.definition(ctx, r.Workflow, r.rev())
	return e.view(r, d), nil
}

// SendEvent delivers an event to a run: one wait takes it — the first
// waiting step, in the definition's order, that waits for it (a wait step
// completes with it, a function's wait resumes). When none waits, the
// event is recorded (up to MaxPendingEvents) and taken by the next wait
// for it. Either way an event is seen by exactly one wait.
func (e *Engine) SendEvent(ctx context.Context, run string, req cairn.EventRequest) (*cairn.EventResult, error) {
	res, d, err := e.sendEvent(ctx, run, req)
	if err != nil || !res.Recorded {
		return res, err
	}
	// Kept for a later wait; when no wait of the definition ever waits for
	// it (names are fixed in the definition), most likely a typo: say so.
	if res.Warning = d.EventWarning(req.Name); res.Warning != "" {
		e.log.Warn("event no wait uses", "run", run, "event", req.Name, "workflow", d.Name, "version", d.Version, "waits", d.Events())
	}
	return res, nil
}

// sendEvent is SendEvent, and the run's definition.
func (e *Engine) sendEvent(ctx context.Context, run string, req cairn.EventRequest) (*cairn.EventResult, *definition, error) {
	if err := trigger.CheckEvent(req.Name, req.ID, req.Payload, "payload", e.cfg.MaxOutputBytes); err != nil {
		return nil, nil, err
	}
	d, err := e.eventTarget(ctx, run, &req.Payload)
	if err != nil {
		return nil, nil, err
	}
	res, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (*cairn.EventResult, error) {
		res := &cairn.EventResult{Resumed: []string{}}
		if res.Duplicate = req.ID != "" && slices.ContainsFunc(r.Journal, func(j cairn.JournalEntry) bool {
			return j.Type == cairn.JournalEventReceived && j.Message == req.ID
		}); res.Duplicate {
			return res, nil
		}
		if err := e.takesEvents(r, fx.now); err != nil {
			return nil, err
		}
		ev := eventRecord{Name: req.Name, Payload: req.Payload, ReceivedAt: fx.now, ID: req.ID}
		r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalEventReceived, Message: req.ID, Data: object.JSON(map[string]any{"name": req.Name, "payload": req.Payload})})
		var err error
		res.Resumed, res.Recorded, err = e.deliver(r, d, ev, fx)
		if err != nil {
			return nil, err
		}
		return res, nil
	})
	return res, d, err
}

// eventTarget returns the definition of the run an event (or an update)
// is sent to, once its payload is stored as a payload of the run when it
// is over the inline limit.
func (e *Engine) eventTarget(ctx context.Context, run string, payload *json.RawMessage) (*definition, error) {
	if err := keys.RunID.Check("run", run); err != nil {
		return nil, err
	}
	r0, err := e.readRun(ctx, run)
	if err != nil {
		return nil, err
	}
	if !r0.Status.Terminal() { // the run exists: its payload goes first
		if *payload, err = e.payloads.Externalize(ctx, run, *payload); err != nil {
			return nil, err
		}
	}
	return e.definition(ctx, r0.Workflow, r0.rev())
}

// takesEvents refuses an event, or an update, to a run that ended (or
// whose deadline passed: it ends now).
func (e *Engine) takesEvents(r *runRecord, now time.Time) error {
	if e.checkDeadline(r, now); r.Status.Terminal() {
		return &ConflictError{Message: fmt.Sprintf("run %s ended (%s); events and updates are not accepted", r.ID, r.Status)}
	}
	return nil
}

// deliver gives ev to the first step, in the definition's order, that
// takes it (one wait takes an event: docs/DECISIONS.md 9.5), or keeps it
// for a later wait (kept), and advances the run.
func (e *Engine) deliver(r *runRecord, d *definition, ev eventRecord, fx *effects) (resumed []string, kept bool, err error) {
	resumed = []string{}
	for _, s := range d.Steps {
		if k := kindOf(&s); k.event != nil && k.event(e, r, d, &s, ev, fx) {
			resumed = append(resumed, s.ID)
			break
		}
	}
	if len(resumed) == 0 {
		if len(r.Events) >= e.cfg.MaxPendingEvents {
			return nil, false, &ConflictError{Message: fmt.Sprintf("run %s already holds %d events no step has waited for", r.ID, len(r.Events))}
		}
		r.Events, kept = append(r.Events, ev), true
	}
	e.advance(r, d, fx)
	return resumed, kept, nil
}

// KeptInputBytes is the largest rendered input a lease keeps for
// StepInput: the lease is rewritten by every heartbeat and cached per
// instance, so a larger one is only measured.
const KeptInputBytes = 8 << 10

// StepInput is the input the lease of a step's attempt gave its worker.
func (e *Engine) StepInput(ctx context.Context, run, step string, attempt int) (*cairn.InputView, error) {
	if err := keys.RunID.Check("run", run); err != nil {
		return nil, err
	}
	if !keys.ValidStep(step) || attempt < 1 {
		return nil, &InvalidError{Field: "step", Message: "not a step id (a map item is <step>.<index>) with an attempt from 1"}
	}
	key, err := e.leaseKeyOfRun(ctx, run, step, attempt)
	if err != nil {
		return nil, err
	}
	l, _, err := readJSON[leaseRecord](ctx, e.store, key)
	if isNotFound(err) {
		// An attempt leased in the run record (inline.go) keeps its input
		// there, the step's latest such attempt only.
		r, rerr := e.readRun(ctx, run)
		if rerr == nil {
			if st := r.Steps[step]; st != nil && st.Lease != nil && st.Lease.Attempt == attempt {
				il := st.Lease
				return &cairn.InputView{Input: il.Input, Bytes: il.InputBytes, Kept: il.InputBytes == 0 || il.Input != nil}, nil
			}
		} else if !isNotFound(rerr) && !errs.IsNotFound(rerr) {
			return nil, rerr
		}
		return nil, &NotFoundError{What: "attempt", ID: fmt.Sprintf("%s/%s/%d", run, step, attempt)}
	} else if err != nil {
		return nil, err
	}
	return &cairn.InputView{Input: l.Input, Bytes: l.InputBytes, Kept: l.InputBytes == 0 || l.Input != nil}, nil
}

// Audit records that who read a run (operation op) in the audit log (engine/internal/audit).
func (e *Engine) Audit(ctx context.Context, who, op, run string) error {
	return e.audit.Read(ctx, e.now(), who, op, run)
}

func (e *Engine) status(ctx context.Context, r *runRecord) *cairn.RunProgress {
	s := &cairn.RunProgress{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Status: r.Status, Rev: r.Rev,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt, Error: r.Error, Steps: []cairn.StepProgress{}}
	s.StepsDone, s.StepsTotal = stepCounts(r)
	d, _ := e.definition(ctx, r.Workflow, r.rev())
	for _, id := range stepOrder(r, d) {
		st := r.Steps[id]
		if st == nil {
			continue
		}
		var def *cairn.Step
		if d != nil {
			def = d.Step(id)
		}
		s.Steps = append(s.Steps, cairn.StepProgress{ID: id, Status: st.Status, Attempt: st.Attempt, Failures: st.Failures})
		progressDetail(&s.Steps[len(s.Steps)-1], st, def) // see liveness.go
	}
	s.NoLiveWorker = e.noLiveWorker(ctx, r)
	return s
}

// stepCounts is a run's progress as every view counts it: the steps its
// definition declares (a map step once, whatever its items; compensation
// steps not), and how many of them completed or were skipped.
func stepCounts(r *runRecord) (done, total int) {
	comp := compSteps(r)
	for id, st := range r.Steps {
		if _, _, item := keys.SplitItem(id); item || slices.Contains(comp, id) {
			continue
		}
		total++
		if st.Status.Settled() {
			done++
		}
	}
	return done, total
}

// stepOrder lists a run's steps in definition order, or by id when the
// definition cannot be read.
func stepOrder(r *runRecord, d *definition) []string {
	order := make([]string, 0, len(r.Steps))
	if d != nil {
		for _, s := range d.Steps {
			order = append(order, s.ID)
		}
		return append(order, compSteps(r)...)
	}
	for id := range r.Steps {
		order = append(order, id)
	}
	sort.Strings(order)
	return order
}

// listedRow is the row in a listing of the run record at key.
func (e *Engine) listedRow(ctx context.Context, key string) (RunRow, error) {
	r, _, err := readJSON[runRecord](ctx, e.store, key)
	if err != nil {
		return RunRow{}, err
	}
	s := cairn.RunSummary{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Status: r.Status, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt, Error: r.Error, Attributes: r.Attrs.View()}
	s.StepsDone, s.StepsTotal = stepCounts(r)
	return RunRow{RunSummary: s, Correlation: r.Correlation, CostUSD: r.Usage.CostUSD, Priority: r.Priority, Attrs: r.Attrs, Rev: r.Rev}, nil
}
