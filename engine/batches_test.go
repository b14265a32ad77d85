package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	bulk "github.com/cairn-dev/cairn/engine/internal/batch"
)

// allRuns reads every run record in the bucket.
func allRuns(t *testing.T, e *Engine) []*runRecord {
	t.Helper()
	ctx := context.Background()
	var out []*runRecord
	opts := blob.ListOptions{Prefix: e.keys.RunsPrefix()}
	for {
		p, err := e.store.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Objects {
			r, err := e.readRun(ctx, bulk.RunIDOfKey(o.Key))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if p.NextPageToken == "" {
			return out
		}
		opts.PageToken = p.NextPageToken
	}
}

// TestBatchSurvivesInstanceDeath: a cancel batch, then a rerun batch, over
// 150 runs of one workflow among 10 of another. Instance A starts each
// batch (its first page) and dies in the middle of the second page, after
// acting on some runs and before moving the cursor; instance B's reaper
// finishes the batch. Every matching run is cancelled, then rerun exactly
// once; no other run is touched. On both key layouts: the sharded one
// keeps runs in 16 listings, which the batch's cursor must merge.
func TestBatchSurvivesInstanceDeath(t *testing.T) {
	for _, layout := range []string{KeyLayoutFlat, KeyLayoutSharded} {
		for name, open := range stores(t) {
			t.Run(layout+"/"+name, func(t *testing.T) { testBatchSurvivesInstanceDeath(t, layout, open) })
		}
	}
}

func testBatchSurvivesInstanceDeath(t *testing.T, layout string, open func(*testing.T) *blob.Bucket) {
	ctx := context.Background()
	store := open(t)
	clk := newClock()
	a := newTestEngine(t, store, Config{Now: clk.Now, KeyLayout: layout})
	b := newTestEngine(t, store, Config{Now: clk.Now, KeyLayout: layout})
	register(t, a, "w", single("bw", cairn.Step{}), single("other", cairn.Step{}))
	const n = 150
	var others []string
	for i := range n + 10 {
		if i%16 == 0 {
			others = append(others, mustStart(t, a, "other", `{}`))
		} else {
			mustStart(t, a, "bw", `{}`)
		}
	}
	clk.Advance(time.Second)
	var dying atomic.Bool
	run := func(req cairn.BatchRequest) *cairn.Batch {
		t.Helper()
		var calls atomic.Int64
		dying.Store(false)
		died := errors.New("instance died")
		bulk.Hook = func(string) error {
			if !dying.Load() {
				return nil
			}
			if calls.Add(1) > 20 {
				return died
			}
			return nil
		}
		defer func() { bulk.Hook = nil }()
		got, err := a.Batches().Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != cairn.BatchRunning || got.Pages != 1 {
			t.Fatalf("after the first page: %+v", got)
		}
		clk.Advance(3 * time.Second)
		dying.Store(true)
		if _, err := a.Reap(ctx); err != nil { // dies in page 2, after acting on 20 runs
			t.Fatal(err)
		}
		if got, _ := a.Batches().Get(ctx, got.ID); got.Pages != 1 {
			t.Fatalf("the dying pass moved the cursor: %+v", got)
		}
		bulk.Hook = nil
		got = reapUntilBatchDone(t, clk, b, got.ID)
		if got.State != cairn.BatchDone || got.EndedAt == nil || got.Failed != 0 {
			t.Fatalf("batch not done: %+v", got)
		}
		// Its timer is gone.
		p, err := store.List(ctx, blob.ListOptions{Prefix: a.keys.TimersPrefix()})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Objects {
			if strings.Contains(o.Key, bulk.TimerPrefix+got.ID) {
				t.Fatalf("timer left: %s", o.Key)
			}
		}
		return got
	}
	cancel := run(cairn.BatchRequest{Action: cairn.BatchCancel, Filter: cairn.BatchFilter{Workflow: "bw", Status: []cairn.RunStatus{cairn.RunRunning}}, Reason: "bulk"})
	cancelled := 0
	for _, r := range allRuns(t, a) {
		switch r.Workflow {
		case "bw":
			if r.Status != cairn.RunCancelled {
				t.Fatalf("run %s of bw is %s", r.ID, r.Status)
			}
			cancelled++
		case "other":
			if r.Status != cairn.RunRunning {
				t.Fatalf("run %s of other is %s", r.ID, r.Status)
			}
		}
	}
	// The dead pass cancelled 20 runs that its redo no longer
	// matches (they are not running any more).
	if cancelled != n || cancel.Applied != n-20 || cancel.Matched != n-20 {
		t.Fatalf("%d cancelled, batch %+v", cancelled, cancel)
	}
	rerun := run(cairn.BatchRequest{Action: cairn.BatchRerun, Filter: cairn.BatchFilter{Workflow: "bw", Status: []cairn.RunStatus{cairn.RunCancelled}}})
	if rerun.Matched != n || rerun.Applied != n {
		t.Fatalf("rerun batch %+v, want %d matched and applied", rerun, n)
	}
	reruns := map[string]int{}
	for _, r := range allRuns(t, a) {
		if r.RerunOf != "" {
			reruns[r.RerunOf]++
		}
	}
	if len(reruns) != n {
		t.Fatalf("%d runs rerun, want %d", len(reruns), n)
	}
	for src, k := range reruns {
		if k != 1 {
			t.Fatalf("run %s rerun %d times", src, k)
		}
	}
	_ = others
}

// TestBatchAcrossLayoutSwitch: a cancel batch started by an engine of the
// flat layout (its cursor a store page token) over runs of both layouts
// is finished by the reaper of an engine of the sharded layout. Every
// matching run is cancelled, the others are left alone (runs started
// before the filter's StartedAfter, which the flat listing reaches before
// the shards), and the batch ends.
func TestBatchAcrossLayoutSwitch(t *testing.T) {
	h := newHarness(t, withConfig(Config{KeyLayout: KeyLayoutFlat}))
	ctx, clk, flat := h.ctx, h.clk, h.e
	sharded := newTestEngine(t, h.store, Config{Now: clk.Now, KeyLayout: KeyLayoutSharded})
	register(t, flat, "w", single("bw", cairn.Step{}), single("other", cairn.Step{}))
	want := map[string]bool{}
	var after time.Time
	for i := range 360 {
		e := flat
		if i >= 250 { // the switch: the newest runs are sharded
			e = sharded
		}
		if i == 100 {
			after = clk.Now().Truncate(time.Millisecond) // run ids keep milliseconds
		}
		wf := "bw"
		if i%16 == 0 {
			wf = "other"
		}
		want[mustStart(t, e, wf, `{}`)] = wf == "bw" && i >= 100
		clk.Advance(time.Millisecond)
	}
	// The flat listing reaches the runs started before StartedAfter
	// before it reaches the shards.
	got, err := flat.Batches().Start(ctx, cairn.BatchRequest{Action: cairn.BatchCancel, Filter: cairn.BatchFilter{Workflow: "bw", StartedAfter: &after}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Pages != 1 || got.Cursor == "" || strings.HasPrefix(got.Cursor, runCursorPrefix) {
		t.Fatalf("after the flat engine's first page: %+v", got)
	}
	got = reapUntilBatchDone(t, clk, sharded, got.ID)
	if got.State != cairn.BatchDone || got.Failed != 0 {
		t.Fatalf("batch not done: %+v", got)
	}
	for id, match := range want {
		r, err := sharded.readRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if match != (r.Status == cairn.RunCancelled) {
			t.Fatalf("run %s of %s is %s (%v), batch %+v", id, r.Workflow, r.Status, r.Layout, got)
		}
	}
}

// TestBatchValidation: a batch needs an action and a filter; bad fields
// are named.
func TestBatchValidation(t *testing.T) {
	h := newHarness(t, wallClock())
	e, ctx := h.e, h.ctx
	for _, c := range []struct {
		req   cairn.BatchRequest
		field string
	}{
		{cairn.BatchRequest{Action: "delete", Filter: cairn.BatchFilter{Workflow: "x"}}, "action"},
		{cairn.BatchRequest{Action: cairn.BatchCancel}, "filter"},
		{cairn.BatchRequest{Action: cairn.BatchCancel, Filter: cairn.BatchFilter{Status: []cairn.RunStatus{"sleepy"}}}, "filter.status[0]"},
		{cairn.BatchRequest{Action: cairn.BatchCancel, Filter: cairn.BatchFilter{Workflow: "bad name"}}, "filter.workflow"},
	} {
		_, err := e.Batches().Start(ctx, c.req)
		if err == nil || !strings.HasPrefix(err.Error(), c.field+":") {
			t.Errorf("%+v: got %v, want an error naming %s", c.req, err, c.field)
		}
	}
	if _, err := e.Batches().Get(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); !isNotFoundAPI(err) {
		t.Fatalf("got %v", err)
	}
}

// reapUntilBatchDone runs e's reaper, 3 s apart on clk, until batch id is
// done (at most 10 passes), and returns the batch as it last read it.
func reapUntilBatchDone(t *testing.T, clk *clock, e *Engine, id string) *cairn.Batch {
	t.Helper()
	ctx := context.Background()
	var got *cairn.Batch
	for range 10 {
		clk.Advance(3 * time.Second)
		if _, err := e.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ = e.Batches().Get(ctx, id); got != nil && got.State == cairn.BatchDone {
			break
		}
	}
	return got
}
