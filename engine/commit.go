package engine

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/commit"
	"github.com/cairn-dev/cairn/engine/internal/mapstep"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/notify"
)

// A mutationOf[T] changes a run record and answers T, or refuses to and
// says why: the one form of every change to a run record (starts,
// worker calls, the reaper, events, cancels, maps and children). It must
// be a pure function of the record (and the time it is given): when a
// compare-and-swap loses, the committer runs it again on the fresh
// record. A mutation that returns an error must leave the record
// unchanged. Mutations are submitted through mutate, which types their
// answers.
type mutationOf[T any] func(r *runRecord, fx *effects) (T, error)

// mutation is the committer's untyped form of a mutationOf[T].
type mutation = mutationOf[any]

// effects are what a committed write asks for after it lands: hints to
// publish for work that became ready, and (set by the committer once the
// write landed) the run and its new revision, for the status requests
// waiting on it.
type effects struct {
	now   time.Time
	hints []notify.Hint
	run   *runRecord
	rev   int64
	// journalFrom is the length of the run's journal before the
	// batch: the entries after it are the batch's (see observe).
	journalFrom int
	// writes are objects the new record refers to, written before its
	// swap (map items and output shards: mapstep.go).
	writes []mapstep.PreWrite
	// after runs once the write landed, before anyone is answered: work
	// the commit asks this instance to start (collecting a map).
	after []func()
}

// inBackground asks this instance to do work for step of run once the
// commit lands: in the background, bounded by CommitTimeout. A failure is
// logged with the message failed; the reaper's visit does the work then.
func (e *Engine) inBackground(fx *effects, run, step, failed string, do func(ctx context.Context) error) {
	fx.after = append(fx.after, func() {
		e.flows.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.CommitTimeout)
			defer cancel()
			if err := do(ctx); err != nil {
				e.log.Warn(failed, "run", run, "step", step, "err", err)
			}
		})
	})
}

// committer is the run records' group commit (engine/internal/commit):
// the mutations of one run that queue while a write to it is in flight
// land together in one compare-and-swap. Its host, below, is the state
// machine's part of every write.
type committer = commit.Committer[runRecord, effects]

func newCommitter(e *Engine) *committer {
	return commit.New(commit.Host[runRecord, effects]{
		Read: func(ctx context.Context, run string) (*blob.Object, error) {
			o, err := getEither(ctx, e.store, e.keys.Run(run), e.keys.OtherRun(run))
			if isNotFound(err) {
				err = &NotFoundError{What: "run", ID: run}
			}
			return o, err
		},
		Begin: func() *effects { return &effects{now: e.now()} },
		Reset: func(fx *effects, r *runRecord) {
			fx.hints, fx.writes, fx.after = fx.hints[:0], fx.writes[:0], fx.after[:0]
			fx.journalFrom = len(r.Journal)
		},
		Decide: func(ctx context.Context, r *runRecord, fx *effects) error {
			// The steps of a compensation a failure started (endRun has
			// no definition: compensate.go).
			// Then the steps made ready that a result cache completes.
			if !r.compensating() && len(fx.hints) == 0 {
				return nil
			}
			d, err := e.definition(ctx, r.Workflow, r.rev())
			if err != nil && r.compensating() {
				return err
			}
			if err != nil {
				return nil // no cache lookups: the steps run
			}
			if r.compensating() {
				e.advance(r, d, fx)
			}
			e.fromCache(ctx, r, d, fx)
			return nil
		},
		Write: e.writeRun,
		Landed: func(r *runRecord, fx *effects, items, attempt int) {
			fx.run, fx.rev = r, r.Rev
			e.audit.Landed(r.ID, r.Reads, r.Rev)
			for i := range fx.hints {
				// The revision that made the work ready: a claim on an
				// instance whose cached copy is at least this new decides
				// the hint without reading the run (claimRun).
				fx.hints[i].Rev = r.Rev
			}
			e.cfg.Telemetry.Committed(items, attempt)
		},
		After:           e.afterCommit,
		Rev:             func(r *runRecord) int64 { return r.Rev },
		Timeout:         e.cfg.CommitTimeout,
		MaxBytes:        e.cfg.MaxRunRecordBytes,
		WritesPerSecond: e.cfg.ObjectWritesPerSecond,
		Log:             e.log,
	})
}

// mutate runs m on the run's record and commits it, together with
// whatever else is queued for the run, and returns m's value or its error
// (or the commit's error). When there is nothing to write (m changed
// nothing) no write is made. m must be a pure function of the record:
// see mutation. It is the only way to change a run record.
func mutate[T any](ctx context.Context, c *committer, run string, m mutationOf[T]) (T, error) {
	val, err := c.Do(ctx, run, func(r *runRecord, fx *effects) (any, error) { return m(r, fx) })
	t, _ := val.(T) // the zero T when m did not answer (an error, a panic)
	return t, err
}

// writeRun swaps r, at its next revision, over version ver: the run's
// next wake-up gets its timer before the write that needs it (a timer
// without need is harmless, a need without a timer would leave a sleep,
// timeout, backoff or deadline to fire late; see armTimer for when a
// commit arms one), and the objects the record refers to are written
// before it. It returns the bytes written and their version, the swap's
// error, or a commit.BeforeError.
func (e *Engine) writeRun(ctx context.Context, r *runRecord, ver blob.Version, fx *effects) ([]byte, blob.Version, error) {
	r.Rev++
	r.UpdatedAt = fx.now
	if e.needsNewTimer(r, fx.now) {
		if _, err := e.armTimer(ctx, r, fx.now); err != nil {
			return nil, "", &commit.BeforeError{Err: err}
		}
	}
	if err := mapstep.Put(ctx, e.store, fx.writes); err != nil {
		return nil, "", &commit.BeforeError{Err: err}
	}
	r.Reads = e.audit.Copy(r.ID, r.Reads, fx.now, r.Status.Terminal()) // an ended run's: the reads held here for its end
	data := object.JSON(r)
	nv, err := e.store.Swap(ctx, e.keys.RunOf(r.Layout, r.ID), data, ver)
	e.admit.Saw(fx.now, err)
	return data, nv, err
}
