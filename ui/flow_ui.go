package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/cairn-dev/cairn"
)

// addFlow fills each step's flow-control line from the workflow
// definition: its concurrency limit, rate limit and priority override.
// The run's status view does not tell whether a ready step is held back
// by flow control, so the page shows the settings, not a parked state.
func addFlow(rv *runView, def *cairn.Workflow) {
	if def == nil {
		return
	}
	byID := map[string]*cairn.Step{}
	for i := range def.Steps {
		byID[def.Steps[i].ID] = &def.Steps[i]
	}
	for i := range rv.Steps {
		if s := byID[rv.Steps[i].ID]; s != nil {
			rv.Steps[i].Flow = stepFlow(s)
		}
	}
	for _, c := range def.Concurrency {
		rv.WorkflowFlow = append(rv.WorkflowFlow, concurrencyText(c))
	}
}

func stepFlow(s *cairn.Step) string {
	var parts []string
	if c := s.Concurrency; c != nil {
		parts = append(parts, concurrencyText(*c))
	}
	if rl := s.RateLimit; rl != nil {
		t := fmt.Sprintf("rate %d per %s", rl.Limit, rl.Period.D())
		if rl.Burst > 1 {
			t += fmt.Sprintf(", burst %d", rl.Burst)
		}
		if rl.Key != "" {
			t += " per key " + rl.Key
		}
		parts = append(parts, t)
	}
	if p := s.Priority; p != nil {
		parts = append(parts, fmt.Sprintf("priority %d", *p))
	}
	return strings.Join(parts, "; ")
}

func concurrencyText(c cairn.ConcurrencyLimit) string {
	t := fmt.Sprintf("at most %d at once", c.Limit)
	if c.Key != "" {
		t += " per key " + c.Key
	}
	return t
}

// batch is a batch job's page: its filter, how far its listing got, its
// counters and state, read through the engine as GET
// /v1/api/batches/{id} does.
func (h *Handler) batch(ctx context.Context, r *http.Request, v *view) (string, error) {
	b, err := h.e.Batches().Get(ctx, r.PathValue("batch"))
	if err != nil {
		return "", err
	}
	v.Title, v.Nav, v.Batch = "Batch "+b.ID, "runs", b
	return "batch", nil
}
