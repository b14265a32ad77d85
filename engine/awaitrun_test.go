package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

// TestAwaitRunAnswersAtTheEnd: a run of three steps, awaited on the
// instance that commits them and on another one over the bus: both
// requests are held through the intermediate changes and answer the
// ended run, with its outputs, once. The request on the committing
// instance reads nothing after its first read; the other reads once per
// change it is told of.
func TestAwaitRunAnswersAtTheEnd(t *testing.T) {
	ctx := context.Background()
	bucket := mem.New()
	bus := notifymem.New()
	cfg := Config{Bus: bus, FallbackInterval: 5 * time.Second}
	aStore, aCounts := counting.Wrap(bucket)
	a := newTestEngine(t, aStore, cfg)
	b := newTestEngine(t, bucket, cfg)
	register(t, a, "w", linear("lin", "1", 3))
	// The instance's first fallback scan and worker sighting, and the
	// start's hint delivered over the bus, before anything is counted.
	if _, err := a.Claim(ctx, ClaimRequest{WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	a.Settle()
	run := mustStart(t, a, "lin", `{"n":1}`)
	type answer struct {
		r   *cairn.Run
		err error
		at  time.Time
	}
	onA, onB := make(chan answer, 1), make(chan answer, 1)
	for _, x := range []struct {
		e  *Engine
		ch chan answer
	}{{a, onA}, {b, onB}} {
		go func() {
			r, err := x.e.AwaitRun(ctx, run, 20*time.Second)
			x.ch <- answer{r, err, time.Now()}
		}()
	}
	awaitWatched(t, a, run)
	awaitWatched(t, b, run)
	aCounts.Reset()
	var last time.Time
	for i := range 3 {
		l := claimOne(t, a, "w")
		if _, err := a.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`"o"`)}); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		if i < 2 {
			select {
			case got := <-onA:
				t.Fatalf("answered before the run ended: %+v", got)
			case got := <-onB:
				t.Fatalf("answered before the run ended: %+v", got)
			default:
			}
		}
	}
	for name, ch := range map[string]chan answer{"A": onA, "B": onB} {
		got := <-ch
		if got.err != nil || got.r.Status != cairn.RunCompleted || string(got.r.Output) == "" {
			t.Fatalf("%s: %+v %v", name, got.r, got.err)
		}
		if d := got.at.Sub(last); d > time.Second {
			t.Fatalf("%s answered %v after the last complete", name, d)
		}
	}
	if g := aCounts.Snapshot().Get; g != 0 {
		t.Errorf("A made %d GETs for 3 steps and its waiting request, want 0", g)
	}
}

// TestAwaitRunHoldEnds: a run that does not end within the hold is
// answered as it is, running, when the hold ends.
func TestAwaitRunHoldEnds(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, nil, Config{})
	register(t, e, "w", single("slow", cairn.Step{}))
	run := mustStart(t, e, "slow", `{}`)
	start := time.Now()
	r, err := e.AwaitRun(ctx, run, 300*time.Millisecond)
	if err != nil || r.Status != cairn.RunRunning {
		t.Fatalf("%+v %v", r, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("answered after %v, before the hold ended", d)
	}
	if _, err := e.AwaitRun(ctx, "not-a-run!", time.Second); err == nil {
		t.Fatal("a malformed run id was accepted")
	}
}
