package engine

import "context"

// Priorities. A run has a priority (StartRequest.Priority, in
// [cairn.MinPriority, cairn.MaxPriority], default 0) and a task step may
// override it (Step.Priority). Every hint of a ready attempt carries its
// step's effective priority, by which an instance's hub hands out hints
// (engine/internal/hub, priority.go: aging bounds starvation).

// stepPriority is the effective priority of a step of r.
func stepPriority(r *runRecord, d *definition, step string) int {
	if d != nil && d.flow != nil {
		if sf := d.flow.Steps[step]; sf != nil && sf.Priority != nil {
			return *sf.Priority
		}
	}
	return r.Priority
}

// priorityOf is stepPriority for callers without the definition at hand
// (it is cached after the first read).
func (e *Engine) priorityOf(ctx context.Context, r *runRecord, step string) int {
	d, err := e.definition(ctx, r.Workflow, r.rev())
	if err != nil {
		return r.Priority
	}
	return stepPriority(r, d, step)
}
