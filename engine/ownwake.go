package engine

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn/engine/internal/par"
)

// Own wakes (engine/internal/wake): an instance that runs the reaper in
// its own process (cairn dev, cairn serve --reap-every) also keeps, in
// memory, the exact due
// time of every run timer it writes, and visits the run at that instant
// instead of waiting for the next pass to list the timer key. The timer
// object stays the durable record — its key is rounded up to a whole
// keys.TimerBucket and written at least timer.Lead ahead, so a pass reading
// the index alone fires a due time up to keys.TimerBucket (or timer.Lead)
// plus the reaper's period late — and the pass that finds it later visits
// the run once more, finds nothing due, and deletes the key. The own wake
// is a shortcut, never the only copy: an instance that dies loses its
// wakes and the index fires them (the L2 bound of docs/ARCHITECTURE.md).
//
// Recording starts when a driver asks for the next wake (KeepOwnWakes):
// an engine nobody drives (a Lambda API instance, a test's engine) keeps
// nothing.

// KeepOwnWakes starts recording the due times of the run timers this
// instance writes (see NextOwnWake, VisitOwnWakes).
func (e *Engine) KeepOwnWakes() { e.own.Start() }

// ownWake records that run is due at at (engine clock), when recording.
func (e *Engine) ownWake(run string, at time.Time) { e.own.Add(run, at) }

// NextOwnWake returns how long until the earliest own wake (ok false when
// there is none) and a channel closed when an earlier one is added.
func (e *Engine) NextOwnWake() (in time.Duration, ok bool, changed <-chan struct{}) {
	return e.own.Next(e.now())
}

// VisitOwnWakes visits, as the reaper would, every run with an own wake
// now due, each once, reapParallel at a time. A visit that fails leaves
// the run to the timer index.
func (e *Engine) VisitOwnWakes(ctx context.Context) ReapStats {
	runs := e.own.Due(e.now())
	var stats ReapStats
	par.Gather(reapParallel, len(runs), func(i int) ReapStats {
		local := ReapStats{RunsVisited: 1}
		if err := e.reapRun(ctx, runs[i], nil, e.now(), &local); err != nil {
			local.Errors++
			e.log.Debug("reaper: own wake's visit failed; the timer index fires it", "run", runs[i], "err", err)
		}
		return local
	}, stats.Add)
	return stats
}
