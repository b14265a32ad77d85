package sdk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testinfra/testnats"
	cnats "github.com/cairn-dev/cairn/notify/nats"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

type progressMark struct {
	I      int   `json:"i"`
	SentNs int64 `json:"sent_ns"`
}

// TestProgressAcrossInstances streams 1,000 progress messages from a Go
// step on one API instance to a Go client of another, the two sharing a
// NATS bus and a bucket: every message arrives, in order, the delivery
// latency is reported, and the messages cost the bucket nothing. The
// instances are tuned so nothing else touches the bucket while the step
// sends (long lease, fallback and reaper periods; a worker of one slot),
// and the requests are counted from the first message's arrival to the
// return of the last one's send (the step's end, which overlaps the last
// deliveries, is not progress);
// the lease's rate is raised, as the test measures delivery, not the
// limit.
func TestProgressAcrossInstances(t *testing.T) {
	const n = 1000
	nsrv := testnats.Start(t, -1)
	base, err := file.New(t.TempDir(), file.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var counts [2]*counting.Counts
	var urls [2]string
	for i := range urls {
		bus, err := cnats.Connect(nsrv.ClientURL(), cnats.Options{Subject: "cairn.progress.test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bus.Close() })
		store, c := counting.Wrap(base)
		counts[i] = c
		urls[i] = sdktest.Start(t, sdktest.Options{Store: store, ReapEvery: time.Hour, Engine: engine.Config{
			Bus: bus, LeaseTTL: time.Minute, FallbackInterval: time.Minute, AnnounceAfter: time.Minute, ProgressRate: 1e6,
		}}).URL
	}
	wc, err := NewClient(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	began, begin := make(chan struct{}), make(chan struct{})
	sent := make(chan [2]counting.Snapshot, 1) // the counts when the last message was sent
	d := Workflow("progress", "1").Task("send", func(ctx StepContext) (any, error) {
		close(began)
		select {
		case <-begin:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for i := range n {
			if err := Progress(ctx, progressMark{I: i, SentNs: time.Now().UnixNano()}); err != nil {
				return nil, fmt.Errorf("progress %d: %w", i, err)
			}
		}
		sent <- [2]counting.Snapshot{counts[0].Snapshot(), counts[1].Snapshot()}
		return "sent", nil
	})
	serve(t, NewWorker(wc, WithConcurrency(1), WithLogger(quiet())).Register(d))
	c, err := NewClient(urls[1])
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, c, "progress", StartOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lat []time.Duration
	var before [2]counting.Snapshot
	begun := false
	for ev, err := range c.Stream(ctx, run.ID) {
		if err != nil {
			t.Fatalf("stream: %v (after %d progress messages)", err, len(lat))
		}
		switch {
		case ev.Kind == cairn.StreamStatus && !begun:
			select { // the stream is open and the body runs
			case <-began:
			case <-time.After(10 * time.Second):
				t.Fatal("the step's body did not start within 10s")
			}
			close(begin)
			begun = true
		case ev.Kind == cairn.StreamProgress:
			var m progressMark
			if err := decodeValue(ev.Progress.Value, &m); err != nil || m.I != len(lat) || ev.Progress.Missed != 0 {
				t.Fatalf("progress message %d: %s (missed %d), %v", len(lat), ev.Progress.Value, ev.Progress.Missed, err)
			}
			lat = append(lat, time.Since(time.Unix(0, m.SentNs)))
			if len(lat) == 1 {
				// Counted from the first message on: what the
				// stream's opening and the claim cost is settled.
				before = [2]counting.Snapshot{counts[0].Snapshot(), counts[1].Snapshot()}
			}
		}
	}
	if len(lat) != n {
		t.Fatalf("%d progress messages arrived, want %d", len(lat), n)
	}
	slices.Sort(lat)
	t.Logf("%d progress messages across two instances over NATS: latency p50 %v, p99 %v, max %v", n, lat[n/2], lat[n*99/100], lat[n-1])
	after := <-sent
	for i := range counts {
		d := after[i].Sub(before[i])
		t.Logf("instance %d: %s while %d messages passed (%.3f requests per message)", i, d, n-1, float64(d.Total())/(n-1))
		if d.Total() != 0 {
			t.Errorf("instance %d made bucket requests while progress passed: %s; want none", i, d)
		}
	}
}

func TestProgressOutsideAStep(t *testing.T) {
	if err := Progress(context.Background(), 1); !errors.Is(err, ErrNotInStep) {
		t.Fatalf("Progress outside a step: %v", err)
	}
}
