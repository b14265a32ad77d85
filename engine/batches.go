package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Bulk operations: cancel or rerun every run matching a filter, as a
// tracked batch job (docs/ARCHITECTURE.md, "Batches").
//
// A batch is one object, batches/<id>, changed only by CAS. It holds the
// filter, the action, a cursor into the listing of runs/ (newest first)
// and counters. Work is done a page of runs at a time: list a page from
// the cursor, read each run the page names that the run id's time does
// not already rule out, apply the action to those that match, then CAS
// the cursor past the page. The POST that creates a batch does its first
// page; a timer timers/<due>/b-<id> makes the reaper do the rest,
// batchPagesPerPass pages a pass, re-arming the timer until the batch is
// done. An instance that dies anywhere leaves the timer and the record:
// the next pass redoes at most the page it was on. Both actions are
// idempotent (a cancel of an ended run is a no-op; a rerun carries the
// idempotency key batch:<id>:<run>), so a page done twice changes
// nothing twice.

// The API's batch views (the root package's views.go).
type (
	BatchFilter  = cairn.BatchFilter
	BatchRequest = cairn.BatchRequest
	Batch        = cairn.Batch
)

// Batch actions and states (cairn.Batch*).
const (
	BatchCancel  = cairn.BatchCancel
	BatchRerun   = cairn.BatchRerun
	BatchRunning = cairn.BatchRunning
	BatchDone    = cairn.BatchDone
)

const (
	batchPageSize      = 100
	batchPagesPerPass  = 5
	batchTimerPrefix   = "b-"
	batchMaxErrors     = 10
	batchMaxStatuses   = 8
	batchPassFor       = 20 * time.Second
	batchReasonMaxSize = 512
)

func batchTimerID(name string) (string, bool) { return strings.CutPrefix(name, batchTimerPrefix) }

// runStartedAt is the start time a run id encodes (ids are ULIDs with
// inverted time, see newRunID).
func runStartedAt(id string) (time.Time, bool) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(ulid.MaxTime() - u.Time()), true
}

// StartBatch checks the request, stores the batch and its timer, and does
// its first page.
func (e *Engine) StartBatch(ctx context.Context, req BatchRequest) (*Batch, error) {
	if req.Action != BatchCancel && req.Action != BatchRerun {
		return nil, &InvalidError{Field: "action", Message: "must be cancel or rerun"}
	}
	f := req.Filter
	if len(f.Status) == 0 && f.Workflow == "" && f.StartedAfter == nil && f.StartedBefore == nil {
		return nil, &InvalidError{Field: "filter", Message: "set at least one of status, workflow, started_after, started_before"}
	}
	if len(f.Status) > batchMaxStatuses {
		return nil, &InvalidError{Field: "filter.status", Message: fmt.Sprintf("at most %d statuses", batchMaxStatuses)}
	}
	for i, s := range f.Status {
		if !slices.Contains(s.Values(), s) {
			return nil, &InvalidError{Field: fmt.Sprintf("filter.status[%d]", i), Message: fmt.Sprintf("unknown run status %q", s)}
		}
	}
	if f.Workflow != "" {
		if err := keys.WorkflowName.Check("filter.workflow", f.Workflow); err != nil {
			return nil, err
		}
	}
	if f.StartedAfter != nil && f.StartedBefore != nil && !f.StartedAfter.Before(*f.StartedBefore) {
		return nil, &InvalidError{Field: "filter.started_after", Message: "must be before started_before"}
	}
	if len(req.Reason) > batchReasonMaxSize {
		return nil, &InvalidError{Field: "reason", Message: fmt.Sprintf("at most %d bytes", batchReasonMaxSize)}
	}
	now := e.now()
	if f.StartedBefore == nil || f.StartedBefore.After(now) {
		t := now
		f.StartedBefore = &t
	}
	b := &Batch{ID: ulid.MustNew(ulid.Timestamp(now), rand.Reader).String(), Action: req.Action, Filter: f, Reason: req.Reason,
		State: BatchRunning, CreatedAt: now, UpdatedAt: now, Errors: []string{}}
	// The timer first: a batch stored without one would never go on.
	if _, err := e.putTimer(ctx, batchTimerPrefix+b.ID, timerDue(now, now)); err != nil {
		return nil, err
	}
	if _, err := e.store.Create(ctx, e.keys.Batch(b.ID), mustJSON(b)); err != nil {
		return nil, err
	}
	got, err := e.advanceBatch(ctx, b.ID, 1)
	if err != nil {
		e.log.Warn("batch: the first page failed; the reaper goes on", "batch", b.ID, "err", err)
		return b, nil
	}
	return got, nil
}

// GetBatch returns a batch.
func (e *Engine) GetBatch(ctx context.Context, id string) (*Batch, error) {
	if _, err := ulid.ParseStrict(id); err != nil {
		return nil, &InvalidError{Field: "batch", Message: "not a batch id"}
	}
	b, _, err := readJSON[Batch](ctx, e.store, e.keys.Batch(id))
	if isNotFound(err) {
		return nil, &NotFoundError{What: "batch", ID: id}
	}
	return b, err
}

// batchHook, when set (tests), is called before the action on each
// matching run; an error stops the page there, as a dying instance would.
var batchHook func(run string) error

// advanceBatch does up to pages pages of a batch and returns it as
// stored after the last.
func (e *Engine) advanceBatch(ctx context.Context, id string, pages int) (*Batch, error) {
	key := e.keys.Batch(id)
	var b *Batch
	for done := 0; done < pages; {
		cur, ver, err := readJSON[Batch](ctx, e.store, key)
		if err != nil {
			return nil, err
		}
		b = cur
		if b.State == BatchDone {
			return b, nil
		}
		next := *b
		next.Errors = slices.Clone(b.Errors)
		if err := e.batchPage(ctx, &next); err != nil {
			return b, err
		}
		next.UpdatedAt = e.now()
		next.Pages++
		if next.State == BatchDone {
			t := next.UpdatedAt
			next.EndedAt = &t
		}
		_, err = e.store.Swap(ctx, key, mustJSON(&next), ver)
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

// batchPageKeys lists the run keys of b's next page and the cursor after
// it ("" when the listing ends there), and whether the page is newest
// first (so that a run started before the filter's StartedAfter ends the
// batch).
//
// The flat layout pages through runs/ with the store's page tokens. The
// sharded layout keeps runs in 16 listings (and the flat one, for runs
// written before the switch), none of them newest first on its own: its
// page is the merged listing's (listRunKeys) and its cursor the id of the
// last run of the page, marked with runCursorPrefix like the run
// listing's. A page token without the mark is a batch an engine of the
// flat layout started: its listing of runs/ goes on to the end, through
// the flat runs and then through every shard in key order, which is not
// newest first — each run is looked at once, none is skipped.
func (e *Engine) batchPageKeys(ctx context.Context, b *Batch) (keys []string, next string, newestFirst bool, err error) {
	if e.keys.Sharded && b.Cursor == "" || strings.HasPrefix(b.Cursor, runCursorPrefix) {
		keys, more, err := e.scan.RunKeys(ctx, strings.TrimPrefix(b.Cursor, runCursorPrefix), batchPageSize)
		if err != nil || !more || len(keys) == 0 {
			return keys, "", true, err
		}
		return keys, runCursorPrefix + runIDOfKey(keys[len(keys)-1]), true, nil
	}
	p, err := e.store.List(ctx, blob.ListOptions{Prefix: e.keys.RunsPrefix(), PageSize: batchPageSize, PageToken: b.Cursor})
	if err != nil {
		return nil, "", false, err
	}
	for _, o := range p.Objects {
		keys = append(keys, o.Key)
	}
	return keys, p.NextPageToken, !e.keys.Sharded, nil
}

// runIDOfKey is the run id a run record's key ends with, in either layout.
func runIDOfKey(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }

// batchPage does one page of b from its cursor, updating b in memory.
func (e *Engine) batchPage(ctx context.Context, b *Batch) error {
	keys, next, newestFirst, err := e.batchPageKeys(ctx, b)
	if err != nil {
		return err
	}
	f := b.Filter
	for _, key := range keys {
		id := runIDOfKey(key)
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
			b.State = BatchDone
			return nil
		}
		r, err := e.readRun(ctx, id)
		if isNotFoundErr(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if f.Workflow != "" && r.Workflow != f.Workflow || len(f.Status) > 0 && !slices.Contains(f.Status, r.Status) {
			continue
		}
		b.Matched++
		if batchHook != nil {
			if err := batchHook(id); err != nil {
				return err
			}
		}
		switch b.Action {
		case BatchCancel:
			_, err = e.CancelRun(ctx, id, b.Reason)
		case BatchRerun:
			_, err = e.RerunRun(ctx, id, RerunRequest{IdempotencyKey: "batch:" + b.ID + ":" + id})
		}
		var conflict *ConflictError
		switch {
		case err == nil:
			b.Applied++
		case errors.As(err, &conflict):
			b.Skipped++
		case blob.IsRetryable(err) || ctx.Err() != nil:
			return err // the store is failing: redo this page later
		default:
			b.Failed++
			if len(b.Errors) < batchMaxErrors {
				b.Errors = append(b.Errors, id+": "+publicError(err))
			}
		}
	}
	b.Cursor = next
	if next == "" {
		b.State = BatchDone
	}
	return nil
}

// reapBatch is the reaper's visit of a due batch timer: a few pages, then
// a new timer unless the batch is done, then the spent timers go.
func (e *Engine) reapBatch(ctx context.Context, id string, timerKeys []string, now time.Time, stats *ReapStats) error {
	ctx, cancel := context.WithTimeout(ctx, batchPassFor)
	defer cancel()
	b, err := e.advanceBatch(ctx, id, batchPagesPerPass)
	if isNotFound(err) {
		return e.dropOrphanTimers(ctx, timerKeys, now)
	}
	keep := ""
	if err != nil || b.State != BatchDone {
		k, perr := e.putTimer(ctx, batchTimerPrefix+id, timerDue(now, now))
		if perr != nil {
			return perr
		}
		keep = k
	}
	if err != nil {
		return err
	}
	return e.dropTimers(ctx, timerKeys, keep)
}
