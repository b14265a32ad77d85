package engine

import (
	"context"
	"fmt"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/notify"
)

// Pause and resume (docs/ARCHITECTURE.md, "Pause"). A paused run is live
// (not ended) and offered to no worker: claims drop its hints
// (tryClaim, runHints, the fallback scan), the reaper announces none of
// its steps, fires none of its due times and visits none of its maps or
// children; nextWake asks for no timer, so the reaper comes back only
// for the leases of attempts still held. Those attempts go on: their
// heartbeats, completes and fails are applied, and so are events, but
// advance starts no step. The resume advances the run in one commit: the
// deadline first, then the due times that passed meanwhile, then the
// steps whose dependencies settled; every ready attempt is hinted again.

// PauseRun pauses a running run. Pausing a paused run writes nothing; an
// ended run is a ConflictError.
func (e *Engine) PauseRun(ctx context.Context, id string) (*cairn.Run, error) {
	return e.setPaused(ctx, id, true)
}

// ResumeRun resumes a paused run. Resuming a running run writes nothing;
// an ended run is a ConflictError.
func (e *Engine) ResumeRun(ctx context.Context, id string) (*cairn.Run, error) {
	return e.setPaused(ctx, id, false)
}

func (e *Engine) setPaused(ctx context.Context, id string, pause bool) (*cairn.Run, error) {
	if err := keys.RunID.Check("run", id); err != nil {
		return nil, err
	}
	var d *definition
	r, err := mutate(ctx, e.commits, id, func(r *runRecord, fx *effects) (*runRecord, error) {
		if r.Status.Terminal() {
			return nil, &ConflictError{Message: fmt.Sprintf("run %s already ended: %s", id, r.Status)}
		}
		if pause == (r.Status == cairn.RunPaused) {
			return r, nil // already so: nothing to write
		}
		if pause {
			e.pauseRecord(r, fx)
			return r, nil
		}
		var err error
		if d, err = e.definition(ctx, r.Workflow, r.rev()); err != nil {
			return nil, err // the record stays as it was
		}
		e.resumeRecord(r, d, fx)
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	if d == nil {
		d, _ = e.definition(ctx, r.Workflow, r.rev())
	}
	return e.view(r, d), nil
}

// pauseRecord marks r paused and tells every instance's hub that its ready
// attempts are gone (taken hints), so no claim waits on them.
func (e *Engine) pauseRecord(r *runRecord, fx *effects) {
	r.Status = cairn.RunPaused
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalRunPaused})
	for id, st := range r.Steps {
		if st.Status == cairn.StepReady && st.Attempt > 0 {
			fx.hints = append(fx.hints, notify.Hint{Run: r.ID, Workflow: r.Workflow, Version: r.Version, Step: id, Attempt: st.Attempt, Taken: true})
		}
	}
}

// resumeRecord makes r running again and does what its pause held back: the
// deadline, the due times that passed, the hints of its ready attempts
// (a retry backoff still running as a NotBefore hint), advancing.
func (e *Engine) resumeRecord(r *runRecord, d *definition, fx *effects) {
	r.Status = cairn.RunRunning
	r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalRunResumed})
	if e.checkDeadline(r, fx.now) {
		return
	}
	for id, st := range r.Steps {
		if st.Status == cairn.StepReady && st.Attempt > 0 {
			h := notify.Hint{Run: r.ID, Workflow: r.Workflow, Version: r.Version, Step: id, Attempt: st.Attempt, Priority: stepPriority(r, d, id)}
			if st.ReadyAt != nil {
				h.NotBefore = notBefore(*st.ReadyAt, fx.now)
			}
			fx.hints = append(fx.hints, h)
		}
	}
	e.fireDue(r, d, fx)
	e.advance(r, d, fx)
}
