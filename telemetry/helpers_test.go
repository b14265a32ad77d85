package telemetry_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
	"github.com/cairn-dev/cairn/telemetry"
)

// telemetered is the telemetry of tp and mp (either may be nil) and a
// file bucket whose requests it records: start runs an API instance on
// them, as many as a test wants on the one bucket.
type telemetered struct {
	tel   *telemetry.T
	store *blob.Bucket
}

func newTelemetered(t *testing.T, tp trace.TracerProvider, mp metric.MeterProvider) *telemetered {
	t.Helper()
	tel, err := telemetry.New(tp, mp)
	if err != nil {
		t.Fatal(err)
	}
	store, err := file.New(t.TempDir(), file.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return &telemetered{tel: tel, store: store}
}

func (f *telemetered) start(t *testing.T) *sdktest.Server {
	return sdktest.Start(t, sdktest.Options{Store: telemetry.WrapBucket(f.store, f.tel), Engine: engine.Config{Telemetry: f.tel}})
}

// failsOnce is a workflow of two steps: a, which fails retryably with
// msg on its first attempt and returns "A" on its second, and b after it.
func failsOnce(name, msg string) *sdk.WorkflowDef {
	var once sync.Once
	return sdk.Workflow(name, "1").
		Task("a", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (string, error) {
			failed := false
			once.Do(func() { failed = true })
			if failed {
				return "", sdk.Retryable(errors.New(msg))
			}
			return "A", nil
		}), sdk.Retry(sdk.RetryPolicy{InitialBackoff: 10 * time.Millisecond})).
		Task("b", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (string, error) { return "B", nil }), sdk.After("a"))
}
