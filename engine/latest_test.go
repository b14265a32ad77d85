package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/internal/testutil"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

func startedVersion(t *testing.T, e *Engine, wf string) string {
	t.Helper()
	return getRun(t, e, mustStart(t, e, wf, `{}`)).Version
}

// readsOfStarts is an engine with LatestTTL ttl where worker w serves
// workflow x, and how many objects n starts of x naming no version read.
func readsOfStarts(t *testing.T, ttl time.Duration, n int) (*Engine, int64) {
	t.Helper()
	store, counts := counting.Wrap(mem.New())
	e := newTestEngine(t, store, Config{LatestTTL: ttl})
	register(t, e, "w", single("x", cairn.Step{}))
	counts.Reset()
	for range n {
		mustStart(t, e, "x", `{}`)
	}
	return e, counts.Snapshot().Get
}

// Starts that name no version read workflows/<name>/@latest once per
// LatestTTL per instance, not once each; a registration through the
// instance is seen by its next start.
func TestLatestVersionCached(t *testing.T) {
	e, got := readsOfStarts(t, time.Hour, 20)
	if got != 1 {
		t.Fatalf("20 starts read %d objects, want the one @latest read", got)
	}
	v2 := single("x", cairn.Step{})
	v2.Version = "2"
	register(t, e, "w", v2)
	if v := startedVersion(t, e, "x"); v != "2" {
		t.Fatalf("a start after a registration through this instance ran version %s, want 2", v)
	}
}

// Another instance hears of a registration on the bus and starts the new
// version; without a bus it may start the previous one until its cached
// entry is LatestTTL old, never later.
func TestLatestVersionAcrossInstances(t *testing.T) {
	for _, withBus := range []bool{true, false} {
		name := map[bool]string{true: "bus", false: "ttl"}[withBus]
		t.Run(name, func(t *testing.T) {
			store := mem.New()
			cfg := Config{LatestTTL: time.Hour}
			if !withBus {
				cfg.LatestTTL = 300 * time.Millisecond
			} else {
				cfg.Bus = notifymem.New()
			}
			a := newTestEngine(t, store, cfg)
			b := newTestEngine(t, store, cfg)
			register(t, a, "w", single("x", cairn.Step{}))
			if v := startedVersion(t, b, "x"); v != "1" {
				t.Fatalf("version %s, want 1", v)
			}
			v2 := single("x", cairn.Step{})
			v2.Version = "2"
			registeredAt := time.Now()
			register(t, a, "w", v2)
			// With the bus: soon after the announcement. Without: once the
			// cached entry is LatestTTL old (the cache reads the wall clock,
			// so this waits that long), with 200 ms of slack.
			within, what := 5*time.Second, "the other instance to start version 2 after the announced registration"
			if !withBus {
				within = cfg.LatestTTL + 200*time.Millisecond - time.Since(registeredAt)
				what = fmt.Sprintf("the other instance to start version 2 within LatestTTL %v (+200ms) of the registration", cfg.LatestTTL)
			}
			testutil.EventuallyEvery(t, within, 20*time.Millisecond, what, func() (bool, string) {
				v := startedVersion(t, b, "x")
				return v == "2", fmt.Sprintf("version %s started %v after the registration", v, time.Since(registeredAt).Round(time.Millisecond))
			})
		})
	}
}

// A negative LatestTTL reads @latest on every start.
func TestLatestVersionUncached(t *testing.T) {
	if _, got := readsOfStarts(t, -1, 5); got != 5 {
		t.Fatalf("5 starts read %d objects, want 5", got)
	}
}

// A definition this instance registered is registered again (every
// worker's start) without reading the bucket: only the worker record is
// written. Another instance still checks it against the stored one.
func TestReRegisterKnownDefinition(t *testing.T) {
	store, counts := counting.Wrap(mem.New())
	a := newTestEngine(t, store, Config{})
	b := newTestEngine(t, store, Config{})
	wf := single("x", cairn.Step{})
	register(t, a, "w1", wf)
	counts.Reset()
	register(t, a, "w2", wf)
	if s := counts.Snapshot(); s.Reads() != 0 || s.Writes() != 1 {
		t.Fatalf("re-registration: %d reads, %d writes; want 0 and the worker record", s.Reads(), s.Writes())
	}
	other := wf
	other.Steps = []cairn.Step{{ID: "only", Retry: &cairn.RetryPolicy{MaxAttempts: 3}}}
	if _, err := a.Register(context.Background(), cairn.RegisterRequest{WorkerID: "w3", Workflows: []cairn.Workflow{other}}); err == nil {
		t.Fatal("other content under a registered version accepted")
	}
	if _, err := b.Register(context.Background(), cairn.RegisterRequest{WorkerID: "w4", Workflows: []cairn.Workflow{other}}); err == nil {
		t.Fatal("other content under a registered version accepted by another instance")
	}
}
