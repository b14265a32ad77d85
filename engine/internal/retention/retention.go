// Package retention deletes an ended run's objects: its leases, map items
// and shards, idempotency key, payloads, record and timers
// (docs/ARCHITECTURE.md, "Retention"). When a run is deleted is the
// engine's decision (its DeleteRun, and the reaper's visit of a run whose
// retention passed); how is this package's, through a Host.
package retention

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/audit"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/timer"
)

// TimerPrefix marks the timer of an ended run (timers/<due>/r-<run>): the
// claims' fallback scan, which reads the runs of the first timers in the
// index to find lost work, skips such a name without a read (it is no run
// id), so ended runs waiting for their retention cost idle instances
// nothing. The reaper visits the run.
const TimerPrefix = "r-"

// Host is what a purge uses of the engine.
type Host struct {
	Store *blob.Bucket
	Keys  keys.Layout
	// Audit takes the reads a run's record holds before it is deleted.
	Audit *audit.Log
	Now   func() time.Time
	// ActiveCheckInterval is the reaper's routine re-arm period of a
	// running run; MinTimerLead is how far ahead of now a timer is always
	// written.
	ActiveCheckInterval time.Duration
	MinTimerLead        time.Duration
	// DeletePayloads deletes every payload object of a run; Drop forgets
	// the run's cached record.
	DeletePayloads func(ctx context.Context, run string) error
	Drop           func(run string)
}

// Run is what a purge needs of an ended run's record.
type Run struct {
	ID, Layout, Workflow, IdempotencyKey string
	TimerAt, EndedAt, Deadline           *time.Time
	// ReadyAt are the steps' retry backoffs (an ended run's WakeAt are
	// cleared).
	ReadyAt []*time.Time
	// Due is when the run may be deleted (zero: never).
	Due time.Time
	// Index are the run's search attribute index entries (attrs.Keys).
	Index []string
	// Reads are the reads the record holds (engine/internal/audit).
	Reads []audit.Entry
}

// Purger deletes ended runs through its Host.
type Purger struct{ h Host }

// New returns a purger using h.
func New(h Host) *Purger { return &Purger{h: h} }

func isNotFound(err error) bool { return errors.Is(err, blob.ErrNotFound) }

// Purge deletes an ended run's objects, the record last but for the
// timers: a purge that dies midway leaves the record, and with it the
// timer that brings the reaper back to finish. The reads the record holds
// are written to the audit log before it is deleted (a failure leaves it;
// a purge that fails after that writes them again). due are timer keys the
// caller found due (the reaper's); they go with the run's other timers
// (TimerKeys).
func (p *Purger) Purge(ctx context.Context, r Run, due []string) error {
	h := p.h
	leases, err := h.Store.ListAll(ctx, h.Keys.LeasesOfRun(r.Layout, r.ID))
	if err != nil {
		return err
	}
	maps, err := h.Store.ListAll(ctx, h.Keys.MapPrefix(r.ID)) // map items and shards (engine/mapstep.go)
	if err != nil {
		return err
	}
	leases = append(leases, maps...)
	for _, k := range r.Index {
		leases = append(leases, blob.Attributes{Key: k})
	}
	for _, l := range leases {
		if err := h.Store.Delete(ctx, l.Key); err != nil && !isNotFound(err) {
			return err
		}
	}
	if r.IdempotencyKey != "" {
		ikey := h.Keys.Idempotency(r.Workflow, r.IdempotencyKey)
		o, err := h.Store.Get(ctx, ikey)
		switch {
		case err == nil && string(o.Data) == r.ID:
			if err := h.Store.Delete(ctx, ikey); err != nil && !isNotFound(err) {
				return err
			}
		case err != nil && !isNotFound(err):
			return err
		}
	}
	if err := h.DeletePayloads(ctx, r.ID); err != nil {
		return err
	}
	if err := p.keepReads(ctx, r); err != nil {
		return err
	}
	if err := h.Store.Delete(ctx, h.Keys.RunOf(r.Layout, r.ID)); err != nil && !isNotFound(err) {
		return err
	}
	h.Drop(r.ID)
	timers, err := p.TimerKeys(ctx, r, due)
	if err != nil {
		return err
	}
	for _, key := range timers {
		if err := h.Store.Delete(ctx, key); err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

// keepReads writes the reads r's record holds to the audit log, as
// entries of r (none: nothing).
func (p *Purger) keepReads(ctx context.Context, r Run) error {
	if len(r.Reads) == 0 {
		return nil
	}
	reads := make([]audit.Entry, len(r.Reads))
	for i, e := range r.Reads {
		e.Run = r.ID
		reads[i] = e
	}
	return p.h.Audit.Record(ctx, reads...)
}

// TimerKeys are the keys of r's timers that Purge deletes, the caller's
// due keys among them, each once. A timer key starts with its due time,
// so only a listing of the whole timer index (every run's timers) could
// find all of one run's; instead the keys are computed from the record,
// one per distinct due time and name, in both layouts (the sharded one
// also deletes the flat key, as the engine's timerKeys):
//
//   - the newest timer a commit armed (TimerAt), under either name;
//   - the retention timer, at ended_at + retention: the reaper visit that
//     finds an ended run's last timer spent arms it without recording it
//     in TimerAt (a visit writes no record);
//   - the deadline and the steps' retry backoffs still ahead: ending the
//     run arms the retention timer, which supersedes a later one as
//     TimerAt (a far deadline), and a superseded timer stays until due;
//
// and one listing: the reaper's routine re-arms of a running run (a ready
// or leased step's visit every ActiveCheckInterval) are not recorded
// either, and the last one may be due up to ActiveCheckInterval +
// MinTimerLead + keys.TimerBucket after the run ended. While that window
// is ahead, its timers are listed (recent).
//
// Cost: 3 DELETEs (6 sharded) plus 1 (2) per distinct future wake-up of
// the record, and, for a run that ended less than that window ago (a
// forced delete always), at most keys.MaxTimerWindowLists listings (twice
// that sharded: the run's shard and the flat keys), each of the timers
// due in a block of about the window's length. Left for the reaper, which
// drops a due timer whose run is gone (the engine's dropOrphanTimers):
// timers already due, a timer written less than MinTimerLead before its
// due time (its key is then later: a retention timer armed after the
// retention passed), an attempt's timeout timer (armAt; its time is in
// the lease), a superseded sleep's or wait timeout's timer (ending the
// run clears their WakeAt), and a retention timer armed under another
// Config.Retention.
func (p *Purger) TimerKeys(ctx context.Context, r Run, due []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	addKey := func(key string) {
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	add := func(at time.Time, name string) {
		for _, key := range p.h.Keys.TimerKeys(at, name) {
			addKey(key)
		}
	}
	for _, key := range due {
		addKey(key)
	}
	if r.TimerAt != nil {
		add(*r.TimerAt, r.ID)
		add(*r.TimerAt, TimerPrefix+r.ID)
	}
	// A due time's key is the due time rounded up to its bucket (the
	// engine's timer.Due), unless it was armed less than MinTimerLead
	// ahead (then later: left to the reaper, above).
	if !r.Due.IsZero() {
		add(timer.CeilTo(r.Due, keys.TimerBucket), TimerPrefix+r.ID)
	}
	now := p.h.Now()
	future := func(t *time.Time) {
		if t != nil && t.After(now) {
			add(timer.CeilTo(*t, keys.TimerBucket), r.ID)
		}
	}
	future(r.Deadline)
	for _, t := range r.ReadyAt {
		future(t)
	}
	recent, err := p.recent(ctx, r, now)
	for _, key := range recent {
		addKey(key)
	}
	return out, err
}

// recent lists the plain timers of ended run r due from its end to
// ActiveCheckInterval + MinTimerLead + keys.TimerBucket later, nothing
// once that is past. The window is covered by at most
// keys.MaxTimerWindowLists decimal prefixes of the due time
// (timers/<s>/<ms-prefix>), the smallest blocks that do, so each LIST
// reads the timers of one shard due within a few windows' length.
func (p *Purger) recent(ctx context.Context, r Run, now time.Time) ([]string, error) {
	if r.EndedAt == nil {
		return nil, nil
	}
	hi := r.EndedAt.Add(p.h.ActiveCheckInterval + p.h.MinTimerLead + keys.TimerBucket)
	if !hi.After(now) {
		return nil, nil
	}
	var out []string
	for _, prefix := range p.h.Keys.TimerWindow(r.EndedAt.Truncate(keys.TimerBucket), hi, r.ID) {
		objs, err := p.h.Store.ListAll(ctx, prefix)
		if err != nil {
			return out, err
		}
		for _, o := range objs {
			if _, name, ok := p.h.Keys.ParseTimer(o.Key); ok && name == r.ID {
				out = append(out, o.Key)
			}
		}
	}
	return out, nil
}
