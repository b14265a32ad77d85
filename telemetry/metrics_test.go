package telemetry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/telemetry"
)

// Two runs — one whose first step fails once and is retried, one whose
// only step fails for good — and a claim refused because its run ended
// produce exactly the counters they should.
func TestRunsProduceTheirMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	srv := newTelemetered(t, nil, mp).start(t)
	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ok := failsOnce("ok", "try again")
	doomed := sdk.Workflow("doomed", "1").
		Task("s", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (string, error) {
			return "", sdk.Fatal(errors.New("no"))
		}))
	stop := testutil.ServeWorker(t, sdk.NewWorker(c, sdk.WithName("w1"), sdk.WithClaimWait(time.Second)).Register(ok, doomed), 10*time.Second)
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	r1, err := c.Start(wctx, "ok", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(wctx, r1.ID); err != nil || r.Status != sdk.RunCompleted {
		t.Fatalf("ok: %+v %v", r, err)
	}
	r2, err := c.Start(wctx, "doomed", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(wctx, r2.ID); err != nil || r.Status != sdk.RunFailed {
		t.Fatalf("doomed: %+v %v", r, err)
	}
	// A claim scoped to an ended run is refused: 409 run_terminal.
	resp, err := http.Post(srv.URL+"/v1/api/steps/claim", "application/json",
		bytes.NewReader([]byte(`{"worker_id":"w1","run":"`+r2.ID+`","wait_ms":0}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("claim on an ended run: %d, want 409", resp.StatusCode)
	}
	stop()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := []count{
		{telemetry.MetricRunsStarted, kv("workflow", "ok"), 1},
		{telemetry.MetricRunsStarted, kv("workflow", "doomed"), 1},
		{telemetry.MetricRunsEnded, kv("workflow", "ok", "status", "completed"), 1},
		{telemetry.MetricRunsEnded, kv("workflow", "doomed", "status", "failed"), 1},
		{telemetry.MetricAttemptsEnded, kv("outcome", "completed"), 2},
		{telemetry.MetricAttemptsEnded, kv("workflow", "ok", "outcome", "failed", "class", "retryable"), 1},
		{telemetry.MetricAttemptsEnded, kv("workflow", "doomed", "outcome", "failed", "class", "fatal"), 1},
		{telemetry.MetricRetried, kv("workflow", "ok", "class", "retryable"), 1},
		{telemetry.MetricDeadLettered, kv("workflow", "doomed", "class", "fatal"), 1},
		{telemetry.MetricDeadLettered, kv("workflow", "ok"), 0},
		{telemetry.MetricRequeued, nil, 0},
		{telemetry.MetricLost, nil, 0},
		{telemetry.MetricLeases, nil, 4},
		{telemetry.MetricRejections, kv("op", "claimSteps", "reason", "run_terminal"), 1},
		{telemetry.MetricRejections, nil, 1},
	}
	for _, w := range want {
		if got := sum(rm, w.name, w.attrs); got != w.n {
			t.Errorf("%s%v = %d, want %d", w.name, w.attrs, got, w.n)
		}
	}
	atLeast := []count{
		{telemetry.MetricClaims, kv("result", "held"), 1},
		{telemetry.MetricClaims, kv("result", "error"), 1},
		{telemetry.MetricBlobRequests, kv("op", "create", "class", "put", "result", "ok"), 6}, // 2 runs, 4 leases
		{telemetry.MetricBlobRequests, kv("op", "swap", "class", "put", "result", "ok"), 4},
		{telemetry.MetricBlobRequests, kv("class", "get"), 1},
		{telemetry.MetricCommitBatch, nil, 4}, // one count per write: at least one per attempt's end
		{telemetry.MetricRequests, kv("op", "startRun", "status", 201), 2},
		{telemetry.MetricReapDuration, nil, 1},
		{telemetry.MetricWakeLatency, nil, 1}, // the claims a hint woke
	}
	for _, w := range atLeast {
		if got := sum(rm, w.name, w.attrs); got < w.n {
			t.Errorf("%s%v = %d, want at least %d", w.name, w.attrs, got, w.n)
		}
	}
	// Every wake is a lease granted by a claim (not every lease is a
	// wake: a complete's claim_next and the fallback scan have no hint).
	if woke, granted := sum(rm, telemetry.MetricWakeLatency, nil), sum(rm, telemetry.MetricLeases, nil); woke > granted {
		t.Errorf("%d wakes for %d leases granted", woke, granted)
	}
	// No claim is in progress once the worker stopped: the gauge comes
	// back to 0 (the server ends a held claim when its caller hangs up).
	testutil.Eventually(t, 5*time.Second, telemetry.MetricClaimsWaiting+" back to 0 after the worker stopped", func() (bool, string) {
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		n := sum(rm, telemetry.MetricClaimsWaiting, nil)
		return n == 0, fmt.Sprintf("%s = %d", telemetry.MetricClaimsWaiting, n)
	})
}

// count is how many data points (or histogram counts) a metric has
// with attributes that include attrs.
type count struct {
	name  string
	attrs []attribute.KeyValue
	n     int64
}

func kv(pairs ...any) []attribute.KeyValue {
	var out []attribute.KeyValue
	for i := 0; i < len(pairs); i += 2 {
		k := pairs[i].(string)
		switch v := pairs[i+1].(type) {
		case string:
			out = append(out, attribute.String(k, v))
		case int:
			out = append(out, attribute.Int(k, v))
		}
	}
	return out
}

// sum adds the data points of the named counter (or the counts of the
// named histogram) whose attributes include attrs.
func sum(rm metricdata.ResourceMetrics, name string, attrs []attribute.KeyValue) int64 {
	var n int64
	match := func(set attribute.Set) bool {
		for _, a := range attrs {
			if v, ok := set.Value(a.Key); !ok || v != a.Value {
				return false
			}
		}
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += int64(p.Count)
					}
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += int64(p.Count)
					}
				}
			}
		}
	}
	return n
}
