package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

func allKeys(t testing.TB, store *blob.Bucket, prefix string) []string {
	t.Helper()
	objs, err := store.ListAll(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

// runSteps claims, starts and completes n leases of worker w.
func runSteps(t testing.TB, e *Engine, w string, n int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		l := claimOne(t, e, w)
		if _, err := e.Started(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
}

// The sharded layout puts a shard letter after the first segment of every
// run, lease, timer and audit key, and the runs spread over the shards.
func TestShardedLayoutSpreadsKeys(t *testing.T) {
	h := newHarness(t, withConfig(Config{KeyLayout: KeyLayoutSharded}), wallClock(), withWorkflows("w", linear("lin", "1", 2)))
	ctx, store, e := h.ctx, h.store, h.e
	const n = 64
	for range n {
		mustStart(t, e, "lin", `{"n":1}`)
	}
	runSteps(t, e, "w", n) // the first step of each
	if err := e.Audit(ctx, "alice", "get", mustStart(t, e, "lin", `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"runs/", "leases/", "timers/", "audit/"} {
		shards := map[byte]int{}
		for _, k := range allKeys(t, store, kind) {
			rest := strings.TrimPrefix(k, kind)
			if len(rest) < 3 || !keys.IsShard(rest[0]) || rest[1] != '/' {
				t.Fatalf("%s without a shard: %q", kind, k)
			}
			shards[rest[0]]++
		}
		if kind != "audit/" && len(shards) < 12 {
			t.Fatalf("%s over %d shards (%v), want most of 16", kind, len(shards), shards)
		}
	}
	// A run of this layout says so, and its leases follow it.
	r, err := e.readRun(ctx, mustStart(t, e, "lin", `{"n":1}`))
	if err != nil || r.Layout != KeyLayoutSharded {
		t.Fatalf("run layout %q, %v", r.Layout, err)
	}
}

// Ordered run listings merge the shards and the flat prefix: newest
// first, every run once, paged by a cursor, with filters.
func TestShardedListRunsNewestFirst(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	clk := newClock()
	flat := newTestEngine(t, store, Config{KeyLayout: KeyLayoutFlat, Now: clk.Now})
	sharded := newTestEngine(t, store, Config{KeyLayout: KeyLayoutSharded, Now: clk.Now})
	register(t, flat, "w", linear("lin", "1", 1))
	var ids []string
	for i := range 50 {
		e := flat
		if i >= 15 { // the older runs flat, the newer ones sharded
			e = sharded
		}
		ids = append(ids, mustStart(t, e, "lin", `{"n":1}`))
		clk.Advance(time.Millisecond)
	}
	for range 10 { // some runs end, for the status filter
		l := claimOne(t, sharded, "w")
		if _, err := sharded.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	want := slices.Clone(ids)
	slices.Reverse(want) // newest first
	for _, limit := range []int{7, 50, 100} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("listing does not end")
			}
			p, err := sharded.ListRuns(ctx, ListRequest{Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Runs {
				got = append(got, r.ID)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %d runs\n got %v\nwant %v", limit, len(got), got, want)
		}
	}
	var done []string
	cursor := ""
	for {
		p, err := sharded.ListRuns(ctx, ListRequest{Limit: 3, Cursor: cursor, Status: cairn.RunCompleted})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Runs {
			if r.Status != cairn.RunCompleted {
				t.Fatalf("filter let %s through", r.Status)
			}
			done = append(done, r.ID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(done) != 10 || !sort.StringsAreSorted(done) {
		t.Fatalf("completed runs listed: %v", done)
	}
	// A cursor of the merged listing names a run id; anything else that
	// decodes is a page token of the flat listing, and a bad id is refused.
	if _, err := sharded.ListRuns(ctx, ListRequest{Cursor: keys.EncodeCursor(runCursorPrefix + "../x")}); err == nil {
		t.Fatal("a cursor with a bad run id was accepted")
	}
}

// Migration: a bucket written with the flat layout keeps working under an
// engine that writes the sharded one. A flat run's lease ids, record,
// timers and later leases stay flat; new runs are sharded; listings,
// the reaper and retention see both.
func TestMigrationFlatToSharded(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	clk := newClock()
	bus := notifymem.New()
	flat := newTestEngine(t, store, Config{KeyLayout: KeyLayoutFlat, Now: clk.Now, Bus: bus, Retention: time.Hour})
	wf := cairn.Workflow{Name: "mig", Version: "1", Steps: []cairn.Step{
		{ID: "a"},
		{ID: "nap", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Minute), After: []string{"a"}},
		{ID: "b", After: []string{"nap"}},
	}}
	register(t, flat, "w", wf)
	old := mustStart(t, flat, "mig", "")
	la := claimOne(t, flat, "w") // a flat lease, claimed before the switch
	if _, err := store.Stat(ctx, "leases/"+old+"/a/000001"); err != nil {
		t.Fatalf("flat lease: %v", err)
	}

	// The switch: from now on only sharded engines.
	flat.Close()
	e := newTestEngine(t, store, Config{KeyLayout: KeyLayoutSharded, Now: clk.Now, Bus: bus, Retention: time.Hour})
	if _, err := e.Started(ctx, la.ID); err != nil {
		t.Fatalf("started of a flat lease: %v", err)
	}
	if _, err := e.Complete(ctx, la.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
		t.Fatalf("complete of a flat lease: %v", err)
	}
	if s := stepOf(getRun(t, e, old), "nap"); s.Status != cairn.StepSleeping {
		t.Fatalf("nap %s", s.Status)
	}
	clk.Advance(time.Millisecond) // run ids order by their start's millisecond
	fresh := mustStart(t, e, "mig", "")
	clk.Advance(2 * time.Minute)
	if _, err := e.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; getRun(t, e, old).Status != cairn.RunCompleted; i++ {
		if i > 5 {
			t.Fatalf("the flat run did not finish: %+v", getRun(t, e, old))
		}
		l := claimOne(t, e, "w")
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		if _, err := e.Reap(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The old run stayed flat: its record and both leases.
	for _, k := range []string{"runs/" + old, "leases/" + old + "/a/000001", "leases/" + old + "/b/000001"} {
		if _, err := store.Stat(ctx, k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	for _, k := range allKeys(t, store, "") {
		if strings.Contains(k, old) && strings.HasPrefix(k, "runs/") && k != "runs/"+old ||
			strings.Contains(k, old) && strings.HasPrefix(k, "leases/") && !strings.HasPrefix(k, "leases/"+old+"/") {
			t.Fatalf("the flat run has a sharded object %q", k)
		}
		if strings.Contains(k, fresh) && (strings.HasPrefix(k, "runs/"+fresh) || strings.HasPrefix(k, "leases/"+fresh)) {
			t.Fatalf("the new run has a flat object %q", k)
		}
	}
	// Listing: both, newest first.
	p, err := e.ListRuns(ctx, ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 || p.Runs[0].ID != fresh || p.Runs[1].ID != old {
		t.Fatalf("listing %+v", p.Runs)
	}
	// Retention deletes the flat run entirely, timers of both layouts
	// included.
	if getRun(t, e, fresh).Status == cairn.RunRunning {
		if _, err := e.CancelRun(ctx, fresh, "done"); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Hour)
	for range 3 {
		if _, err := e.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	for _, k := range allKeys(t, store, "") {
		if strings.Contains(k, old) || strings.Contains(k, fresh) {
			t.Fatalf("left after retention: %q (all: %v)", k, allKeys(t, store, ""))
		}
	}
}

// What the sharded layout costs in listings: an idle reaper pass lists
// the flat prefix and 16 shards (17 LISTs), and so does a waiting claim's
// fallback scan, at most once per FallbackInterval per instance.
func TestShardedListingCost(t *testing.T) {
	h := newHarness(t, withConfig(Config{KeyLayout: KeyLayoutSharded}), counted(), withWorkflows("w", single("nap", cairn.Step{Kind: cairn.KindSleep, Duration: cairn.Duration(time.Hour)})))
	ctx, clk, e, counts := h.ctx, h.clk, h.e, h.counts
	for range 100 {
		mustStart(t, e, "nap", "")
	}
	counts.Reset()
	st, err := e.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := counts.Snapshot(); s.List != 1+keys.Shards || st.ListRequests != 1+keys.Shards || s.Total() != s.List {
		t.Fatalf("idle pass: %+v, stats %+v; want %d LISTs and nothing else", s, st, 1+keys.Shards)
	}
	counts.Reset()
	for range 3 {
		e.fallbackScan(ctx)
		clk.Advance(e.cfg.FallbackInterval)
	}
	if s := counts.Snapshot(); s.List != 3*(1+keys.Shards) {
		t.Fatalf("3 fallback scans made %d LISTs, want %d", s.List, 3*(1+keys.Shards))
	}
}
