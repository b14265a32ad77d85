// Package sdk is cairn's Go SDK: define workflows in Go, serve their steps
// from a Worker, and start, watch, signal and cancel runs with a Client.
//
// A workflow is a named, versioned DAG of steps. Task steps run a body on
// a worker; wait steps wait for an event; sleep steps wait for a time.
// Each step's input is a template the engine renders (CEL expressions in
// ${…} over the run's input, state and earlier outputs):
//
//	triage := sdk.Workflow("triage", "1").
//		Task("classify", sdk.Handle(classify), sdk.Input(map[string]any{"text": "${input.body}"})).
//		Task("route", sdk.Handle(route), sdk.After("classify"),
//			sdk.Input(map[string]any{"category": "${steps.classify.output.category}"}),
//			sdk.Retry(sdk.RetryPolicy{MaxAttempts: 5, InitialBackoff: time.Second})).
//		Wait("approval", "approved", sdk.After("route"), sdk.Timeout(24*time.Hour))
//
//	func classify(ctx sdk.StepContext, in Ticket) (Category, error) { … }
//
// A Worker registers its workflows and serves their task steps: it
// reserves a concurrency slot before each claim, long-polls for leases,
// sends started before every body, heartbeats every lease it holds in one
// batched call per period, and reports each body's outcome, answering the
// engine's refusals by reason (already_applied is success; fenced drops
// the work and cancels the body; run_terminal cancels the run's bodies;
// not_started is logged as a worker bug):
//
//	c, _ := sdk.ClientFromEnv() // $CAIRN_SERVER, $CAIRN_KEY
//	w := sdk.NewWorker(c, sdk.WithConcurrency(8)).Register(triage)
//	err := w.Serve(ctx) // until ctx is cancelled, then drains
//
// A body returns its output or an error: Retryable errors are retried
// within the step's budget, Failure names a class (non-retryable when the
// step's policy says so), anything else is fatal, and a panic is
// recovered as retryable. Through its StepContext a body reads earlier
// outputs and the run state, sets a state patch and usage, and learns of
// cancellation (lease lost, run ended, attempt timed out, shutdown).
//
// A Client starts runs and follows them:
//
//	run, _ := c.Start(ctx, "triage", sdk.StartOptions{Input: ticket, IdempotencyKey: ticket.ID})
//	reply, err := sdk.Result[Reply](ctx, c, run.ID)
//
// Everything goes over HTTP through the client generated from the
// committed OpenAPI document (package openapi/client). Answers about runs,
// workflows and workers are decoded into the root package's views
// (cairn.Run, cairn.StepView, …), the types the engine encodes them from,
// so every field the API sends reaches the program. See docs/SDK.md.
package sdk
