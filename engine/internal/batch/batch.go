// Package batch keeps the engine's bulk operations: cancel, rerun, pause
// or resume every run matching a filter, as a tracked batch job (docs/ARCHITECTURE.md,
// "Batches").
//
// A batch is one object, batches/<id>, changed only by CAS. It holds the
// filter, the action, a cursor into the listing of runs/ (newest first)
// and counters. Work is done a page of runs at a time: list a page from
// the cursor, read each run the page names that the run id's time does
// not already rule out, apply the action to those that match, then CAS
// the cursor past the page. The POST that creates a batch does its first
// page; a timer timers/<due>/b-<id> makes the reaper do the rest,
// pagesPerPass pages a pass, re-arming the timer until the batch is done.
// An instance that dies anywhere leaves the timer and the record: the
// next pass redoes at most the page it was on. Every action is
// idempotent (a cancel of an ended run is a no-op; a rerun carries the
// idempotency key batch:<id>:<run>; pausing a paused run, or resuming a
// running one, writes nothing), so a page done twice changes nothing
// twice.
//
// The engine's StartBatch and GetBatch (engine/batches.go) forward here;
// what batches need of the engine is its Host.
package batch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

const (
	pageSize     = 100
	pagesPerPass = 5
	// TimerPrefix starts the timer names of batches.
	TimerPrefix   = "b-"
	maxErrors     = 10
	maxStatuses   = 8
	passFor       = 20 * time.Second
	reasonMaxSize = 512
)

// Host is what batches use of the engine.
type Host struct {
	Store *blob.Bucket
	Keys  keys.Layout
	Now   func() time.Time
	Log   *slog.Logger
	// RunKeys lists up to n run keys after the run id after ("": from the
	// start) in the merged listing of the sharded layout, newest first,
	// and whether more follow; CursorMark marks a cursor of that listing.
	RunKeys    func(ctx context.Context, after string, n int) ([]string, bool, error)
	CursorMark string
	// Run reads a run's workflow and status (a NotFoundError when it is
	// gone).
	Run func(ctx context.Context, run string) (workflow string, status cairn.RunStatus, err error)
	// Cancel and Rerun apply the actions (a ConflictError when the run's
	// state refuses).
	Cancel func(ctx context.Context, run, reason string) (*cairn.Run, error)
	Rerun  func(ctx context.Context, run, idempotencyKey string) error
	// Pause and Resume pause and resume a run (a ConflictError when it
	// ended).
	Pause, Resume func(ctx context.Context, run string) (*cairn.Run, error)
	// PublicError is what a client may hear of an action's error.
	PublicError func(error) string
	// TimerDue is when a timer for due is written; PutTimer writes the
	// timer named name at a due time TimerDue returned, and returns its
	// key; DropTimers deletes timer keys but keep; DropOrphanTimers those
	// of a batch that does not exist, but those young enough to belong to
	// a start still in flight.
	TimerDue         func(due, now time.Time) time.Time
	PutTimer         func(ctx context.Context, name string, due time.Time) (string, error)
	DropTimers       func(ctx context.Context, timerKeys []string, keep string) error
	DropOrphanTimers func(ctx context.Context, timerKeys []string, now time.Time) error
}

// Batches is the batches of one engine.
type Batches struct{ h Host }

// New returns the batches kept through h.
func New(h Host) *Batches { return &Batches{h: h} }

// TimerID is the batch a timer name belongs to, if any.
func TimerID(name string) (string, bool) { return strings.CutPrefix(name, TimerPrefix) }

// runStartedAt is the start time a run id encodes (ids are ULIDs with
// inverted time, see the engine's newRunID).
func runStartedAt(id string) (time.Time, bool) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(ulid.MaxTime() - u.Time()), true
}

// RunIDOfKey is the run id a run record's key ends with, in either layout.
func RunIDOfKey(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }

func isNotFound(err error) bool { return errors.Is(err, blob.ErrNotFound) }

// Start checks the request, stores the batch and its timer, and does its
// first page.
func (x *Batches) Start(ctx context.Context, req cairn.BatchRequest) (*cairn.Batch, error) {
	h := x.h
	if !slices.Contains([]string{cairn.BatchCancel, cairn.BatchRerun, cairn.BatchPause, cairn.BatchResume}, req.Action) {
		return nil, &errs.InvalidError{Field: "action", Message: "must be cancel, rerun, pause or resume"}
	}
	f := req.Filter
	if len(f.Status) == 0 && f.Workflow == "" && f.StartedAfter == nil && f.StartedBefore == nil {
		return nil, &errs.InvalidError{Field: "filter", Message: "set at least one of status, workflow, started_after, started_before"}
	}
	if len(f.Status) > maxStatuses {
		return nil, &errs.InvalidError{Field: "filter.status", Message: fmt.Sprintf("at most %d statuses", maxStatuses)}
	}
	for i, s := range f.Status {
		if !slices.Contains(s.Values(), s) {
			return nil, &errs.InvalidError{Field: fmt.Sprintf("filter.status[%d]", i), Message: fmt.Sprintf("unknown run status %q", s)}
		}
	}
	if f.Workflow != "" {
		if err := keys.WorkflowName.Check("filter.workflow", f.Workflow); err != nil {
			return nil, err
		}
	}
	if f.StartedAfter != nil && f.StartedBefore != nil && !f.StartedAfter.Before(*f.StartedBefore) {
		return nil, &errs.InvalidError{Field: "filter.started_after", Message: "must be before started_before"}
	}
	if len(req.Reason) > reasonMaxSize {
		return nil, &errs.InvalidError{Field: "reason", Message: fmt.Sprintf("at most %d bytes", reasonMaxSize)}
	}
	now := h.Now()
	if f.StartedBefore == nil || f.StartedBefore.After(now) {
		t := now
		f.StartedBefore = &t
	}
	b := &cairn.Batch{ID: ulid.MustNew(ulid.Timestamp(now), rand.Reader).String(), Action: req.Action, Filter: f, Reason: req.Reason,
		State: cairn.BatchRunning, CreatedAt: now, UpdatedAt: now, Errors: []string{}}
	// The timer first: a batch stored without one would never go on.
	if _, err := h.PutTimer(ctx, TimerPrefix+b.ID, h.TimerDue(now, now)); err != nil {
		return nil, err
	}
	if _, err := h.Store.Create(ctx, h.Keys.Batch(b.ID), object.JSON(b)); err != nil {
		return nil, err
	}
	got, err := x.advance(ctx, b.ID, 1)
	if err != nil {
		h.Log.Warn("batch: the first page failed; the reaper goes on", "batch", b.ID, "err", err)
		return b, nil
	}
	return got, nil
}

// Get returns a batch.
func (x *Batches) Get(ctx context.Context, id string) (*cairn.Batch, error) {
	if _, err := ulid.ParseStrict(id); err != nil {
		return nil, &errs.InvalidError{Field: "batch", Message: "not a batch id"}
	}
	b, _, err := object.Read[cairn.Batch](ctx, x.h.Store, x.h.Keys.Batch(id))
	if isNotFound(err) {
		return nil, &errs.NotFoundError{What: "batch", ID: id}
	}
	return b, err
}

// Hook, when set (tests), is called before the action on each matching
// run; an error stops the page there, as a dying instance would.
var Hook func(run string) error

// advance does up to pages pages of a batch and returns it as stored
// after the last.
func (x *Batches) advance(ctx context.Context, id string, pages int) (*cairn.Batch, error) {
	key := x.h.Keys.Batch(id)
	var b *cairn.Batch
	for done := 0; done < pages; {
		cur, ver, err := object.Read[cairn.Batch](ctx, x.h.Store, key)
		if err != nil {
			return nil, err
		}
		b = cur
		if b.State == cairn.BatchDone {
			return b, nil
		}
		next := *b
		next.Errors = slices.Clone(b.Errors)
		if err := x.page(ctx, &next); err != nil {
			return b, err
		}
		next.UpdatedAt = x.h.Now()
		next.Pages++
		if next.State == cairn.BatchDone {
			t := next.UpdatedAt
			next.EndedAt = &t
		}
		_, err = x.h.Store.Swap(ctx, key, object.JSON(&next), ver)
		if errors.Is(err, blob.ErrPreconditionFailed) {
			continue // another instance did this page: go on from its cursor
		}
		if err != nil {
			return b, err
		}
		b = &next
		done++
	}
	return b, nil
}

// pageKeys lists the run keys of b's next page and the cursor after it
// ("" when the listing ends there), and whether the page is newest first
// (so that a run started before the filter's StartedAfter ends the
// batch).
//
// The flat layout pages through runs/ with the store's page tokens. The
// sharded layout keeps runs in 16 listings (and the flat one, for runs
// written before the switch), none of them newest first on its own: its
// page is the merged listing's (Host.RunKeys) and its cursor the id of the
// last run of the page, marked with Host.CursorMark like the run
// listing's. A page token without the mark is a batch an engine of the
// flat layout started: its listing of runs/ goes on to the end, through
// the flat runs and then through every shard in key order, which is not
// newest first — each run is looked at once, none is skipped.
func (x *Batches) pageKeys(ctx context.Context, b *cairn.Batch) (keys []string, next string, newestFirst bool, err error) {
	h := x.h
	if h.Keys.Sharded && b.Cursor == "" || strings.HasPrefix(b.Cursor, h.CursorMark) {
		keys, more, err := h.RunKeys(ctx, strings.TrimPrefix(b.Cursor, h.CursorMark), pageSize)
		if err != nil || !more || len(keys) == 0 {
			return keys, "", true, err
		}
		return keys, h.CursorMark + RunIDOfKey(keys[len(keys)-1]), true, nil
	}
	p, err := h.Store.List(ctx, blob.ListOptions{Prefix: h.Keys.RunsPrefix(), PageSize: pageSize, PageToken: b.Cursor})
	if err != nil {
		return nil, "", false, err
	}
	for _, o := range p.Objects {
		keys = append(keys, o.Key)
	}
	return keys, p.NextPageToken, !h.Keys.Sharded, nil
}

// page does one page of b from its cursor, updating b in memory.
func (x *Batches) page(ctx context.Context, b *cairn.Batch) error {
	keys, next, newestFirst, err := x.pageKeys(ctx, b)
	if err != nil {
		return err
	}
	f := b.Filter
	for _, key := range keys {
		id := RunIDOfKey(key)
		b.Scanned++
		at, ok := runStartedAt(id)
		if !ok {
			continue
		}
		if f.StartedBefore != nil && !at.Before(*f.StartedBefore) {
			continue
		}
		if f.StartedAfter != nil && at.Before(*f.StartedAfter) {
			if !newestFirst {
				continue
			}
			// Runs are listed newest first: every later one is older.
			b.State = cairn.BatchDone
			return nil
		}
		workflow, status, err := x.h.Run(ctx, id)
		if errs.IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if f.Workflow != "" && workflow != f.Workflow || len(f.Status) > 0 && !slices.Contains(f.Status, status) {
			continue
		}
		b.Matched++
		if Hook != nil {
			if err := Hook(id); err != nil {
				return err
			}
		}
		switch b.Action {
		case cairn.BatchCancel:
			_, err = x.h.Cancel(ctx, id, b.Reason)
		case cairn.BatchRerun:
			err = x.h.Rerun(ctx, id, "batch:"+b.ID+":"+id)
		case cairn.BatchPause:
			_, err = x.h.Pause(ctx, id)
		case cairn.BatchResume:
			_, err = x.h.Resume(ctx, id)
		}
		var conflict *errs.ConflictError
		switch {
		case err == nil:
			b.Applied++
		case errors.As(err, &conflict):
			b.Skipped++
		case blob.IsRetryable(err) || ctx.Err() != nil:
			return err // the store is failing: redo this page later
		default:
			b.Failed++
			if len(b.Errors) < maxErrors {
				b.Errors = append(b.Errors, id+": "+x.h.PublicError(err))
			}
		}
	}
	b.Cursor = next
	if next == "" {
		b.State = cairn.BatchDone
	}
	return nil
}

// Reap is the reaper's visit of a due batch timer: a few pages, then a
// new timer unless the batch is done, then the spent timers go.
func (x *Batches) Reap(ctx context.Context, id string, timerKeys []string, now time.Time) error {
	h := x.h
	ctx, cancel := context.WithTimeout(ctx, passFor)
	defer cancel()
	b, err := x.advance(ctx, id, pagesPerPass)
	if isNotFound(err) {
		return h.DropOrphanTimers(ctx, timerKeys, now)
	}
	keep := ""
	if err != nil || b.State != cairn.BatchDone {
		k, perr := h.PutTimer(ctx, TimerPrefix+id, h.TimerDue(now, now))
		if perr != nil {
			return perr
		}
		keep = k
	}
	if err != nil {
		return err
	}
	return h.DropTimers(ctx, timerKeys, keep)
}
