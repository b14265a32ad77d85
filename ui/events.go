package ui

import (
	"cmp"
	"context"
	"net/http"
	"slices"

	"github.com/cairn-dev/cairn"
)

// maxEventWorkflows bounds the workflows the events page reads (the
// newest version of each, one cached read apiece).
const maxEventWorkflows = 200

// eventsView is the events page: what a published event does (the
// triggers and cancel_on of every workflow's newest version), and a form
// that publishes one. Published events are not stored: the runs they
// started name them.
type eventsView struct {
	Rows []eventRow
	// More: more workflows are registered than the page read.
	More bool
}

// eventRow is one trigger or cancel_on of a workflow version.
type eventRow struct {
	Event, Workflow, Version, If string
	Cancels                      bool   // a cancel_on, not a trigger
	Timeout                      string // a cancel_on's window ("" for none)
}

// events is the events page.
func (h *Handler) events(ctx context.Context, r *http.Request, v *view) (string, error) {
	v.Title, v.Nav = "Events", "events"
	ws, err := h.e.ListWorkflows(ctx)
	if err != nil {
		return "", err
	}
	ev := &eventsView{More: len(ws) > maxEventWorkflows}
	for _, w := range ws[:min(len(ws), maxEventWorkflows)] {
		def, err := h.e.GetWorkflow(ctx, w.Name, w.Latest)
		if err != nil {
			return "", err
		}
		ev.Rows = append(ev.Rows, eventRows(def)...)
	}
	slices.SortStableFunc(ev.Rows, func(a, b eventRow) int {
		return cmp.Or(cmp.Compare(a.Event, b.Event), cmp.Compare(a.Workflow, b.Workflow))
	})
	v.Events = ev
	return "events", nil
}

// eventRows lists a workflow version's triggers, then its cancel_on.
func eventRows(def *cairn.Workflow) []eventRow {
	var rows []eventRow
	for _, t := range def.On {
		rows = append(rows, eventRow{Event: t.Event, Workflow: def.Name, Version: def.Version, If: t.If})
	}
	for _, c := range def.CancelOn {
		row := eventRow{Event: c.Event, Workflow: def.Name, Version: def.Version, If: c.If, Cancels: true}
		if c.Timeout > 0 {
			row.Timeout = c.Timeout.D().String()
		}
		rows = append(rows, row)
	}
	return rows
}
