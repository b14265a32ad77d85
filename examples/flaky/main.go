// Command flaky is a worker for the "flaky" workflow: a step that calls an
// unreliable upstream, failing twice with a retryable error before it
// succeeds, retried by the engine with backoff; and a validation step whose
// typed failure ("invalid_data") is listed as non-retryable, so bad data
// fails the run at once.
//
//	go run ./examples/flaky
//	go run ./cmd/cairn runs start flaky --input '{"city":"Lisbon"}' --wait
//	go run ./cmd/cairn runs start flaky --input '{"city":""}' --wait    # fails: invalid_data
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

// Request is the run's input.
type Request struct {
	City string `json:"city"`
}

// Forecast is fetch_forecast's output.
type Forecast struct {
	City     string  `json:"city"`
	TempC    float64 `json:"temp_c"`
	Attempts int     `json:"attempts"`
}

// Workflow is the flaky workflow.
func Workflow() *sdk.WorkflowDef {
	return sdk.Workflow("flaky", "1").
		Describe("Retries: a flaky upstream retried with backoff; bad input failed at once.").
		Task("validate", sdk.Handle(validate), sdk.Retry(sdk.RetryPolicy{NonRetryable: []string{"invalid_data"}})).
		Task("fetch_forecast", sdk.Handle(fetchForecast), sdk.After("validate"),
			sdk.Input(map[string]any{"city": "${input.city}"}),
			sdk.Timeout(10*time.Second),
			sdk.Retry(sdk.RetryPolicy{MaxAttempts: 5, InitialBackoff: 200 * time.Millisecond, MaxBackoff: 2 * time.Second}))
}

func validate(ctx sdk.StepContext, in Request) (Request, error) {
	if in.City == "" {
		// A typed failure: the step's policy lists invalid_data as
		// non-retryable, so the run fails now instead of retrying.
		return in, sdk.Failure("invalid_data", errors.New("city is required"))
	}
	return in, nil
}

// fetchForecast stands in for an upstream that answers on the third try.
func fetchForecast(ctx sdk.StepContext, in Request) (Forecast, error) {
	attempt := ctx.Info().Attempt
	if attempt < 3 {
		ctx.Logger().Warn("upstream unavailable", "attempt", attempt)
		// Retryable: the engine schedules another attempt after a backoff,
		// within the step's retry budget.
		return Forecast{}, sdk.Retryable(fmt.Errorf("upstream answered 503 on attempt %d", attempt))
	}
	return Forecast{City: in.City, TempC: 21.5, Attempts: attempt}, nil
}

func newWorker(c *sdk.Client, log *slog.Logger) *sdk.Worker {
	return sdk.NewWorker(c, sdk.WithLogger(log), sdk.WithLabels(map[string]string{"example": "flaky"})).Register(Workflow())
}

// main serves the worker until Ctrl-C, with a client of $CAIRN_SERVER.
func main() { example.Main(newWorker) }
