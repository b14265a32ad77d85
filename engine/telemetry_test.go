package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/hub"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/telemetry"
)

func meteredTelemetry(t *testing.T) (*telemetry.T, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(nil, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	return tel, reader
}

// histogram returns the count and sum of the named float histogram.
func histogram(t *testing.T, r *sdkmetric.ManualReader, name string) (uint64, float64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n uint64
	var sum float64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range h.DataPoints {
					n += p.Count
					sum += p.Sum
				}
			}
		}
	}
	return n, sum
}

// counter sums the named counter's points whose attributes include attrs.
func counter(t *testing.T, r *sdkmetric.ManualReader, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			s, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != name {
				continue
			}
		points:
			for _, p := range s.DataPoints {
				for _, a := range attrs {
					if v, ok := p.Attributes.Value(a.Key); !ok || v != a.Value {
						continue points
					}
				}
				n += p.Value
			}
		}
	}
	return n
}

// The wake latency runs from a hint becoming claimable to the claim that
// takes it answering: a hint that waited three (engine) seconds for a
// claim records 3 s; a held claim woken by a hint records 0.
func TestWakeLatencyMetric(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	tel, reader := meteredTelemetry(t)
	e := newTestEngine(t, nil, Config{Now: clk.Now, Telemetry: tel})
	register(t, e, "w1", single("one", cairn.Step{ID: "s"}))

	mustStart(t, e, "one", `{}`)
	clk.Advance(3 * time.Second)
	ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1"})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	if n, sum := histogram(t, reader, telemetry.MetricWakeLatency); n != 1 || sum != 3 {
		t.Fatalf("after a hint that waited 3s: count %d sum %v, want 1 and 3", n, sum)
	}

	// A claim held before the work exists is woken by its hint.
	got := make(chan []cairn.Lease, 1)
	go func() {
		ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", WaitMs: 10_000})
		if err != nil {
			t.Error(err)
		}
		got <- ls
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.AwaitHeldClaims(wctx, 1); err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, "one", `{}`)
	if ls := <-got; len(ls) != 1 {
		t.Fatalf("held claim got %d leases", len(ls))
	}
	if n, sum := histogram(t, reader, telemetry.MetricWakeLatency); n != 2 || sum != 3 {
		t.Fatalf("after a woken claim: count %d sum %v, want 2 and 3", n, sum)
	}
}

// failingBus refuses every publication.
type failingBus struct{}

func (failingBus) Publish(context.Context, []notify.Hint) error { return errors.New("bus down") }
func (failingBus) Subscribe(func(notify.Hint)) (func(), error)  { return func() {}, nil }

// Hints the bus refuses are counted dropped (publish_failed), and this
// instance keeps them for its own claims; hints an instance's pool prunes for
// age are counted dropped (evicted).
func TestDroppedNotificationsMetric(t *testing.T) {
	ctx := context.Background()
	tel, reader := meteredTelemetry(t)
	e := newTestEngine(t, nil, Config{Telemetry: tel, Bus: telemetry.WrapBus(failingBus{}, tel)})
	register(t, e, "w1", single("one", cairn.Step{ID: "s"}))
	run := mustStart(t, e, "one", `{}`)
	if n := e.hub.Size(); n != 1 {
		t.Fatalf("the instance holds %d hints after a failed publication, want its own 1", n)
	}
	if _, err := e.CancelRun(ctx, run, "stop"); err != nil { // a change notice
		t.Fatal(err)
	}
	hint := attribute.String("kind", "hint")
	failed := attribute.String("reason", "publish_failed")
	if n := counter(t, reader, telemetry.MetricDropped, hint, failed); n != 1 {
		t.Errorf("hints dropped by the bus = %d, want 1 (the run's first step)", n)
	}
	if n := counter(t, reader, telemetry.MetricDropped, attribute.String("kind", "change"), failed); n != 1 {
		t.Errorf("change notices dropped by the bus = %d, want 1 (the cancel)", n)
	}
	if n := counter(t, reader, telemetry.MetricPublished); n != 0 {
		t.Errorf("published = %d, want 0", n)
	}

	// The pool prunes hints older than hub.MaxAge when it compacts (every
	// 4096 additions).
	clk := newClock()
	h := hub.New(clk.Now, 0, func(n int) { tel.Dropped("hint", "evicted", n) })
	h.Add(notify.Hint{Run: "old", Workflow: "one", Version: "1", Step: "s", Attempt: 1})
	clk.Advance(hub.MaxAge + time.Minute)
	for i := 1; i < 4096; i++ {
		h.Add(notify.Hint{Run: fmt.Sprint("r", i), Workflow: "one", Version: "1", Step: "s", Attempt: 1})
	}
	if n := counter(t, reader, telemetry.MetricDropped, hint, attribute.String("reason", "evicted")); n != 1 || h.Size() != 4095 {
		t.Errorf("evicted = %d with %d hints left, want 1 and 4095", n, h.Size())
	}
}
