package main

import (
	"context"
	"sync"

	"github.com/cairn-dev/cairn/sdk"
)

// stepCounts makes every view of the CLI count a run's steps the same
// way: STEPS done/total counts the steps the workflow's definition
// declares. A map step is one step however many items it maps; the
// compensation (on_failure) steps of a failed run are not counted; done
// is completed or skipped. The server's views count differently (the
// listing counts every step record, map items and compensation steps
// included; a run's progress counts every record as total), so the CLI
// recounts from the definition (read once per workflow@version) and the
// run's steps.
type stepCounts struct {
	c    *sdk.Client
	mu   sync.Mutex
	defs map[string]map[string]bool // workflow@version → declared step ids (nil: unreadable)
}

func newStepCounts(c *sdk.Client) *stepCounts {
	return &stepCounts{c: c, defs: map[string]map[string]bool{}}
}

// declared is the set of step ids workflow@version declares, or nil when
// its definition cannot be read (the server's counts are kept then).
func (sc *stepCounts) declared(ctx context.Context, workflow, version string) map[string]bool {
	k := workflow + "@" + version
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if ids, ok := sc.defs[k]; ok {
		return ids
	}
	var ids map[string]bool
	if w, err := sc.c.Workflow(ctx, workflow, version); err == nil {
		ids = map[string]bool{}
		for _, s := range w.Steps {
			ids[s.ID] = true
		}
	}
	sc.defs[k] = ids
	return ids
}

// run recounts a run (a get or a progress reading) in place.
func (sc *stepCounts) run(ctx context.Context, r *sdk.Run) {
	ids := sc.declared(ctx, r.Workflow, r.Version)
	if ids == nil {
		return
	}
	r.StepsDone, r.StepsTotal = 0, len(ids)
	for _, s := range r.Steps {
		if ids[s.ID] && s.Status.Settled() {
			r.StepsDone++
		}
	}
}

// summaries recounts listed runs in place. A run with as many step
// records as declared steps has no map items or compensation steps: its
// listed counts are right. Another is read (its progress, not audited),
// up to 8 at a time.
func (sc *stepCounts) summaries(ctx context.Context, runs []sdk.RunSummary) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range runs {
		r := &runs[i]
		ids := sc.declared(ctx, r.Workflow, r.Version)
		if ids == nil || r.StepsTotal == len(ids) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p, err := sc.c.Status(ctx, r.ID, sdk.StatusOptions{})
			if err != nil {
				return
			}
			full := sdk.ProgressRun(p)
			sc.run(ctx, full)
			r.StepsDone, r.StepsTotal = full.StepsDone, full.StepsTotal
		}()
	}
	wg.Wait()
}
