package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- Publishing events (triggers) ----

type publishInput struct {
	Body cairn.PublishRequest
}

// registerEventOps registers publishing an event.
func (a *API) registerEventOps() {
	bodyOp(a, huma.Operation{
		OperationID: "publishEvent", Method: http.MethodPost, Path: "/events", Tags: []string{"Runs"},
		Summary:      "Publish an event",
		Description:  "Starts a run of every workflow whose newest registered version declares a trigger (on) of the event's name whose if the event matches, with the payload as the run's input and the event's name and id on the run (its event). Once per event id and workflow: a retried publish answers the runs the first started, marked existed. At most 100 workflows are matched per event (truncated says when more have a trigger of its name). Cost: one LIST of the event's trigger index, then per matched workflow a start (three writes; a retry: one refused create and two reads). A publish that fails part-way is retried with its id. A workflow with debounce or batch gets no run at once: the event joins its key's window (answered as window), whose run starts when it closes (1 read and 1 create more per such workflow; docs/API.md).",
		MaxBodyBytes: a.payloadBody(),
	}, auth.ScopeExecute, func(ctx context.Context, in *publishInput) (*cairn.PublishResult, error) {
		return a.engine.Publish(ctx, in.Body)
	})
}
