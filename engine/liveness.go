package engine

import (
	"context"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/cairn-dev/cairn"
)

// Whether a run waits for a worker that is not there: a run whose ready
// task step no live worker serves says so (Run.NoLiveWorker and
// RunProgress.NoLiveWorker), so `cairn runs get` and a watcher can tell
// "nobody runs this workflow@version" from "a step is slow". Liveness is
// the workers list's (engine/internal/workers/liveness.go), read at most
// once per workers.LiveTTL per instance, and only for runs that have a ready
// task step: looking at a run costs no extra request otherwise.

// noLiveWorker reports whether r is running and has a ready task step
// that no live worker may run: none serves its workflow@version, or none
// of those has the labels the step requires (label routing).
func (e *Engine) noLiveWorker(ctx context.Context, r *runRecord) bool {
	if r.Status.Terminal() {
		return false
	}
	var ready []string
	for id, st := range r.Steps {
		if st.Status == cairn.StepReady && st.Attempt > 0 {
			ready = append(ready, id)
		}
	}
	if len(ready) == 0 {
		return false
	}
	served, ok := e.workers.Serving(ctx)
	live := served[workflowID{Name: r.Workflow, Version: r.Version}.String()]
	d, err := e.definition(ctx, r.Workflow, r.rev())
	for _, id := range ready {
		if ok && !slices.ContainsFunc(live, func(labels map[string]string) bool { return err != nil || d.Step(id).LabelsMatch(labels) }) {
			return true
		}
	}
	return false
}

// MaxHoldersRead bounds the leases one status call with holders reads.
const MaxHoldersRead = 100

// ReadHolders fills in who holds each ready task step of a running run's
// progress (the status call's holders=true): one lease read per ready
// step, at most MaxHoldersRead of them, eight at a time. Beyond the bound
// the progress says HoldersTruncated.
func (e *Engine) ReadHolders(ctx context.Context, p *cairn.RunProgress) error {
	if p.Status.Terminal() {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	n := 0
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Status != cairn.StepReady || s.Attempt == 0 {
			continue
		}
		if n == MaxHoldersRead {
			p.HoldersTruncated = true
			break
		}
		n++
		g.Go(func() error {
			l, _, err := readJSON[leaseRecord](gctx, e.store, e.keys.Lease(p.ID, s.ID, s.Attempt))
			if isNotFound(err) {
				// Perhaps held in the run record (inline.go).
				l, err = e.inlineHolder(gctx, p.ID, s.ID, s.Attempt, p.Rev)
				if l == nil || err != nil {
					return err
				}
			}
			if err != nil {
				return err
			}
			if l.State == leaseActive {
				s.Holder = l.Holder()
			}
			return nil
		})
	}
	return g.Wait()
}

// progressDetail adds to a step's progress what a watcher shows: its
// kind and event name (from the definition, when readable), when a retry
// or a wake is due, and the error (the step's, or for a ready step being
// retried the previous attempt's).
func progressDetail(p *cairn.StepProgress, st *stepState, def *cairn.Step) {
	if def != nil {
		p.Kind, p.Event = def.EffectiveKind(), def.WaitLabel()
	}
	p.ReadyAt, p.WakeAt, p.Error = st.ReadyAt, st.WakeAt, st.Error
	if p.Error == nil && st.Status == cairn.StepReady {
		for i := len(st.Attempts) - 1; i >= 0; i-- {
			if a := st.Attempts[i]; a.Error != nil {
				p.Error = a.Error
				break
			}
		}
	}
}
