package engine

import (
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/observe"
	"github.com/cairn-dev/cairn/telemetry"
)

// observe logs the run lifecycle a commit recorded and hands the journal
// entries it added to the telemetry (engine/internal/observe).
func (e *Engine) observe(fx *effects) {
	r := fx.run
	if r == nil || fx.journalFrom >= len(r.Journal) {
		return
	}
	observe.Commit(e.log, e.cfg.Telemetry, observe.Run{
		Run:    telemetry.Run{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Parent: r.Trace, CreatedAt: r.CreatedAt},
		Status: r.Status, Error: r.Error,
		Attempts: func(step string) []cairn.Attempt {
			if st := r.Steps[step]; st != nil {
				return st.Attempts
			}
			return nil
		},
	}, r.Journal[fx.journalFrom:])
}

// observeReap records one reaper pass.
func (e *Engine) observeReap(start time.Time, s *ReapStats) {
	e.cfg.Telemetry.Reaped(time.Since(start), map[string]int{
		"timers_due": s.TimersDue, "runs_visited": s.RunsVisited, "leases_lost": s.LeasesLost,
		"attempts_timed_out": s.TimedOut, "announced": s.Announced, "timers_fired": s.TimersFired,
		"rearmed": s.Rearmed, "errors": s.Errors,
	})
}

// observeWake records the wake latency of each lease a claim returns
// (observe.Woke).
func (e *Engine) observeWake(leases []cairn.Lease, woke map[string]time.Time) {
	if e.cfg.Telemetry == nil || len(leases) == 0 {
		return
	}
	observe.Woke(e.cfg.Telemetry, e.now(), leases, woke)
}

// Telemetry returns the engine's telemetry (nil when off).
func (e *Engine) Telemetry() *telemetry.T { return e.cfg.Telemetry }

// LeaseStep reads the run, step and attempt a lease id names, for logs
// and spans; ok is false for an id that does not decode. Nothing about
// the lease is checked: a worker call checks it against the stored lease.
func LeaseStep(id string) (run, step string, attempt int, ok bool) {
	tok, err := keys.ParseLease(id)
	if err != nil {
		return "", "", 0, false
	}
	return tok.Run, tok.Step, tok.Attempt, true
}
