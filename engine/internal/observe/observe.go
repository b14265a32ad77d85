// Package observe is the engine's glue to its logs and telemetry: it logs
// the run lifecycle a commit recorded and hands the journal entries the
// commit added to the telemetry (spans and metrics), and it records the
// wake latency of the leases a claim returns.
package observe

import (
	"log/slog"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/telemetry"
)

// Run is a run record as a commit left it, as observing the commit reads
// it.
type Run struct {
	telemetry.Run
	Status cairn.RunStatus
	Error  *cairn.ErrorInfo
	// Attempts returns a step's attempts in the record (nil when it has
	// no such step).
	Attempts func(step string) []cairn.Attempt
}

// Commit logs the run lifecycle a commit recorded (started and ended at
// info) and hands the journal entries it added to t (nil: telemetry is
// off). The journal is the one place every instance records what
// happened, so the instance that commits an end records its span,
// whichever began it.
func Commit(log *slog.Logger, t *telemetry.T, r Run, added []cairn.JournalEntry) {
	for _, j := range added {
		switch j.Type {
		case cairn.JournalRunStarted:
			log.Info("run started", "run", r.ID, "workflow", r.Workflow, "version", r.Version)
		case cairn.JournalRunCompleted, cairn.JournalRunFailed, cairn.JournalRunCancelled, cairn.JournalRunTimedOut:
			attrs := []any{"run", r.ID, "workflow", r.Workflow, "version", r.Version, "status", r.Status,
				"took", j.At.Sub(r.CreatedAt).Round(time.Millisecond)}
			if r.Error != nil {
				attrs = append(attrs, "class", r.Error.Class)
			}
			log.Info("run ended", attrs...)
		}
	}
	t.Observe(r.Run, added, r.attempt)
}

// attempt finds attempt n of step in the record (nil when it has none).
func (r Run) attempt(step string, n int) *cairn.Attempt {
	as := r.Attempts(step)
	for i := range as {
		if as[i].N == n {
			return &as[i]
		}
	}
	return nil
}

// Woke records the wake latency of each lease a claim returns: from when
// its hint became claimable on this instance (woke, by hint key: it
// arrived, from the bus or this instance's commit, or its retry backoff
// ended) to the claim's answer, now. Leases found by a run-scoped claim's
// own scan have no hint and no latency.
func Woke(t *telemetry.T, now time.Time, leases []cairn.Lease, woke map[string]time.Time) {
	for _, l := range leases {
		if at, ok := woke[notify.Hint{Run: l.Run, Step: l.Step}.Key()]; ok {
			t.Woke(max(now.Sub(at), 0))
		}
	}
}

// Handed records the wake latency of n leases a start handed to a held
// claim: none, the claim answers in the start's own commit.
func Handed(t *telemetry.T, n int) {
	for range n {
		t.Woke(0)
	}
}
