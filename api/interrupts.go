package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
)

// ---- Interrupting a step and resuming it ----

type interruptInput struct {
	Lease string `path:"lease" maxLength:"2048"`
	Body  cairn.InterruptRequest
}

type resumeStepInput struct {
	Run  string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$" doc:"Run id."`
	Step string `path:"step" maxLength:"128" doc:"Step id."`
	Body cairn.ResumeStepRequest
}

func (a *API) registerInterruptOps() {
	bodyOp(a, huma.Operation{
		OperationID: "interruptStep", Method: http.MethodPost, Path: "/steps/{lease}/interrupt", Tags: []string{"Workers"},
		Summary: "End a step's attempt by interrupting it",
		Description: "The body stops and asks for input: the step's status becomes interrupted with the payload, no attempt is offered and no retry budget is spent until someone resumes it (POST /runs/{run}/steps/{step}/resume); the next attempt's lease then carries resumed, resume and interrupt. " +
			"The state patch and usage are applied as a complete's. Refused like complete (already_applied, fenced, run_terminal, not_started); an item of a map step cannot interrupt (422).",
		MaxBodyBytes: a.payloadBody(), Errors: protocolErrors,
	}, auth.ScopeWorker, func(ctx context.Context, in *interruptInput) (*cairn.Ended, error) {
		return a.engine.Interrupt(ctx, in.Lease, in.Body)
	})
	bodyOp(a, huma.Operation{
		OperationID: "resumeStep", Method: http.MethodPost, Path: "/runs/{run}/steps/{step}/resume", Tags: []string{"Runs"},
		Summary: "Resume an interrupted step",
		Description: "Answers a step whose body interrupted: its next attempt is offered at once (at the run's resume when the run is paused), and its lease carries resumed true, the value as resume and the payload as interrupt. " +
			"Resuming again with the value the step was resumed with changes nothing; resuming a step that is not interrupted, or a run that ended, is a 409. Recorded in the journal with the key that resumed it; the answer (the run) is audited like getRun.",
		MaxBodyBytes: 2 * cairn.MaxInterruptBytes, Errors: []int{http.StatusNotFound, http.StatusConflict},
	}, auth.ScopeExecute, func(ctx context.Context, in *resumeStepInput) (*cairn.Run, error) {
		r, err := a.engine.ResumeStep(ctx, in.Run, in.Step, in.Body.Value, who(ctx))
		return audited(ctx, a, "resumeStep", in.Run, r, err)
	})
}
