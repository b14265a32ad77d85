package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- Updates: a request sent to a live run that gets its answer ----

type sendUpdateInput struct {
	Run  string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$"`
	Body cairn.UpdateRequest
}

type getUpdateInput struct {
	Run    string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$"`
	ID     string `path:"id" maxLength:"128" doc:"The update's id."`
	WaitMs int64  `query:"wait_ms" minimum:"0" maximum:"3600000" doc:"Hold the request up to this long (capped at 4/5 of the max request time) until the update is answered or failed. 0 answers at once."`
}

// updateOutput is an update: 200 once answered or failed, 202 while it
// is not (Location: where to poll).
type updateOutput struct {
	Status   int
	Location string `header:"Location" doc:"With 202: the update's URL, to poll (with wait_ms)."`
	Body     *cairn.Update
}

const updatesDoc = " An update is delivered like an event of its name: the first wait step, in the definition's order, waiting for it (or a function's wait) takes it, and its answer is the output of the step that wait names as its answer (the wait's own output, the update's input, when it names none), or what a function replies to it. "

func (a *API) registerUpdateOps() {
	answered := func(u *cairn.Update) *updateOutput {
		out := &updateOutput{Status: http.StatusOK, Body: u}
		if !u.Done() {
			out.Status, out.Location = http.StatusAccepted, BasePath+"/runs/"+u.Run+"/updates/"+u.ID
		}
		return out
	}
	accepted := map[string]*huma.Response{"202": {Description: "Accepted: not answered yet; poll Location.",
		Headers: map[string]*huma.Param{"Location": {Schema: &huma.Schema{Type: "string"}}},
		Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Ref: "#/components/schemas/Update"}}}}}
	op(a, huma.Operation{
		OperationID: "sendUpdate", Method: http.MethodPost, Path: "/runs/{run}/updates", Tags: []string{"Runs"},
		Summary: "Send an update to a run and get its answer",
		Description: "Sends a request to a live run and holds up to wait_ms for the run's answer: 200 with the update once answered (or failed: the step that answers failed, or the run ended first), else 202 with the update, to poll at Location." + updatesDoc +
			"What cannot be delivered is answered to the caller and recorded nowhere: an unknown run is a 404, an ended run a 409, no wait (nor function) of the run left to take the name a 422 naming name. Sent again with the same id, the same update is answered (delivered once); with another name or input, a 409. " +
			"Cost: one read and one write of the run record; held, one more read (a commit on this instance then answers with none).",
		MaxBodyBytes: a.payloadBody(), Errors: []int{http.StatusNotFound, http.StatusConflict}, Responses: accepted,
	}, auth.ScopeExecute, func(ctx context.Context, in *sendUpdateInput) (*updateOutput, error) {
		u, err := a.engine.SendUpdate(ctx, in.Run, in.Body)
		if err != nil {
			return nil, err
		}
		return answered(u), nil
	})
	op(a, huma.Operation{
		OperationID: "getUpdate", Method: http.MethodGet, Path: "/runs/{run}/updates/{id}", Tags: []string{"Runs"},
		Summary:     "Get an update sent to a run",
		Description: "The update and, once it is in, its answer: 200 once answered or failed, 202 while it is not. With wait_ms the request is held until it is (one read, then none per commit on this instance). Audited like reading the run.",
		Errors:      []int{http.StatusNotFound}, Responses: accepted,
	}, auth.ScopeRead, func(ctx context.Context, in *getUpdateInput) (*updateOutput, error) {
		u, err := a.engine.AwaitUpdate(ctx, in.Run, in.ID, time.Duration(in.WaitMs)*time.Millisecond)
		if u, err = audited(ctx, a, "getUpdate", in.Run, u, err); err != nil {
			return nil, err
		}
		return answered(u), nil
	})
}
