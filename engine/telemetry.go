package engine

import (
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/telemetry"
)

// observe logs the run lifecycle a commit recorded (started and ended at
// info) and hands the journal entries it added to the telemetry (spans
// and metrics). The journal is the one place every instance records what
// happened, so the instance that commits an end records its span,
// whichever began it.
func (e *Engine) observe(fx *effects) {
	r := fx.run
	if r == nil || fx.journalFrom >= len(r.Journal) {
		return
	}
	added := r.Journal[fx.journalFrom:]
	for _, j := range added {
		switch j.Type {
		case cairn.JournalRunStarted:
			e.log.Info("run started", "run", r.ID, "workflow", r.Workflow, "version", r.Version)
		case cairn.JournalRunCompleted, cairn.JournalRunFailed, cairn.JournalRunCancelled, cairn.JournalRunTimedOut:
			attrs := []any{"run", r.ID, "workflow", r.Workflow, "version", r.Version, "status", r.Status,
				"took", j.At.Sub(r.CreatedAt).Round(time.Millisecond)}
			if r.Error != nil {
				attrs = append(attrs, "class", r.Error.Class)
			}
			e.log.Info("run ended", attrs...)
		}
	}
	info := telemetry.Run{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Parent: r.Trace, CreatedAt: r.CreatedAt}
	e.cfg.Telemetry.Observe(info, added, func(step string, n int) *cairn.Attempt {
		if st := r.Steps[step]; st != nil {
			for i := range st.Attempts {
				if st.Attempts[i].N == n {
					return &st.Attempts[i]
				}
			}
		}
		return nil
	})
}

// observeReap records one reaper pass.
func (e *Engine) observeReap(start time.Time, s *ReapStats) {
	e.cfg.Telemetry.Reaped(time.Since(start), map[string]int{
		"timers_due": s.TimersDue, "runs_visited": s.RunsVisited, "leases_lost": s.LeasesLost,
		"attempts_timed_out": s.TimedOut, "announced": s.Announced, "timers_fired": s.TimersFired,
		"rearmed": s.Rearmed, "errors": s.Errors,
	})
}

// observeWake records the wake latency of each lease a claim returns:
// from when its hint became claimable on this instance (it arrived, from
// the bus or this instance's commit, or its retry backoff ended) to the
// claim's answer. Leases found by a run-scoped claim's own scan have no
// hint and no latency.
func (e *Engine) observeWake(leases []cairn.Lease, woke map[string]time.Time) {
	t := e.cfg.Telemetry
	if t == nil || len(leases) == 0 {
		return
	}
	now := e.now()
	for _, l := range leases {
		if at, ok := woke[notify.Hint{Run: l.Run, Step: l.Step}.Key()]; ok {
			t.Woke(max(now.Sub(at), 0))
		}
	}
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
