package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

func mapWorkflow(conc, tolerated int) cairn.Workflow {
	return cairn.Workflow{Name: "mapper", Version: "1", Steps: []cairn.Step{
		{ID: "fetch"},
		{ID: "each", Kind: cairn.KindMap, After: []string{"fetch"}, Items: "${steps.fetch.output.items}",
			MaxConcurrency: conc, ToleratedFailures: tolerated, Retry: &cairn.RetryPolicy{MaxAttempts: 2, InitialBackoff: cairn.Duration(time.Millisecond)},
			Input: json.RawMessage(`{"n": "${item}", "i": "${index}", "tag": "${input.tag}"}`)},
		{ID: "sum", After: []string{"each"}, Input: json.RawMessage(`"${size(steps.each.output)}"`)},
	}}
}

// mapWorker serves claims on e until stop: fetch returns n items, each
// item returns n*10 (or fails when fail says so), sum echoes its input.
// It records the most items it saw running at once.
func mapWorker(t *testing.T, ctx context.Context, e *Engine, n int, fail func(n int, attempt int) bool, peak *atomic.Int64) {
	var running atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 50, WaitMs: 200})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("worker %d: claim: %v", w, err)
					}
					return
				}
				for _, l := range ls {
					var out string
					switch l.Step {
					case "fetch":
						xs := make([]int, n)
						for i := range xs {
							xs[i] = i
						}
						out = string(object.JSON(map[string]any{"items": xs}))
					case "each":
						if l.Item == nil {
							t.Errorf("each lease without item")
						}
						cur := running.Add(1)
						for {
							p := peak.Load()
							if cur <= p || peak.CompareAndSwap(p, cur) {
								break
							}
						}
						var in struct {
							N, I int
							Tag  string
						}
						if err := json.Unmarshal(l.Input, &in); err != nil || in.N != *l.Item || in.I != *l.Item || in.Tag != "t" {
							t.Errorf("item %d input %s", *l.Item, l.Input)
						}
						running.Add(-1)
						if fail != nil && fail(in.N, l.Attempt) {
							if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable, Message: fmt.Sprintf("item %d broke", in.N)}}); err != nil && ctx.Err() == nil {
								// A refusal is an answer: another item's failure
								// may have failed the map, and the run, first.
								if _, ok := IsRejection(err); !ok {
									t.Errorf("fail: %v", err)
								}
							}
							continue
						}
						out = fmt.Sprint(in.N * 10)
					default:
						out = string(l.Input)
					}
					if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(out)}); err != nil && ctx.Err() == nil {
						if _, ok := IsRejection(err); !ok {
							t.Errorf("complete %s: %v", l.Step, err)
						}
					}
				}
			}
		}()
	}
	t.Cleanup(wg.Wait)
}

func TestMapCollectsInOrder(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		store, e := h.store, h.e
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var peak atomic.Int64
		const n = 250
		run := mustStart(t, e, "mapper", `{"tag": "t"}`)
		mapWorker(t, ctx, e, n, nil, &peak)
		r := awaitEnded(t, e, run)
		if r.Status != cairn.RunCompleted {
			t.Fatalf("run %s %+v", r.Status, r.Error)
		}
		var outs []int
		if err := json.Unmarshal(stepOf(r, "each").Output, &outs); err != nil || len(outs) != n {
			t.Fatalf("map output %s: %v", render.Clip(string(stepOf(r, "each").Output)), err)
		}
		for i, o := range outs {
			if o != i*10 {
				t.Fatalf("output[%d] = %d, want %d", i, o, i*10)
			}
		}
		if string(r.Output) != fmt.Sprint(n) {
			t.Fatalf("sum saw %s items", r.Output)
		}
		if p := peak.Load(); p > 7 {
			t.Fatalf("%d items ran at once, max_concurrency 7", p)
		}
		m := stepOf(r, "each").Map
		if m == nil || m.Total != n || m.Completed != n || m.Failed != 0 || m.Running != 0 {
			t.Fatalf("progress %+v", m)
		}
		if r.StepsTotal != 3 || len(r.Steps) != 3 {
			t.Fatalf("view shows %d steps (total %d): items must not be steps", len(r.Steps), r.StepsTotal)
		}
		// The record holds no entry per item: no item steps, no held
		// outputs, one hash per shard; the journal has no entry per item.
		raw, err := store.Get(ctx, e.keys.Run(run))
		if err != nil {
			t.Fatal(err)
		}
		if c := strings.Count(string(raw.Data), `"each.`); c != 0 {
			t.Fatalf("record names %d items", c)
		}
		if j := countJournal(t, e, run, cairn.JournalStepReady, ""); j > 10 {
			t.Fatalf("%d step_ready entries in the journal for %d items", j, n)
		}
		shards, err := store.ListAll(ctx, e.keys.MapPrefix(run))
		if err != nil || len(shards) != 1+3 {
			t.Fatalf("map objects %d (%v), want 1 items object and 3 shards", len(shards), err)
		}
	}, wallClock(), counted(), withWorkflows("w", mapWorkflow(7, 0)))
}

func TestMapToleratedFailures(t *testing.T) {
	for _, c := range []struct {
		name      string
		tolerated int
		want      cairn.RunStatus
	}{{"tolerated", 2, cairn.RunCompleted}, {"not tolerated", 1, cairn.RunFailed}} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, wallClock(), withWorkflows("w", mapWorkflow(10, c.tolerated)))
			e := h.e
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var peak atomic.Int64
			var attempts sync.Map
			run := mustStart(t, e, "mapper", `{"tag": "t"}`)
			mapWorker(t, ctx, e, 40, func(n, attempt int) bool {
				if n == 3 || n == 17 {
					attempts.Store(fmt.Sprint(n, "/", attempt), true)
					return true // fails every attempt
				}
				return n == 5 && attempt == 1 // fails once, then succeeds: a retry per item
			}, &peak)
			r := awaitEnded(t, e, run)
			if r.Status != c.want {
				t.Fatalf("run %s (%+v), want %s", r.Status, r.Error, c.want)
			}
			for _, k := range []string{"3/1", "3/2"} {
				if _, ok := attempts.Load(k); !ok && c.want == cairn.RunCompleted {
					t.Fatalf("item attempt %s never ran: per-item retries", k)
				}
			}
			m := stepOf(r, "each").Map
			if c.want == cairn.RunCompleted {
				var outs []*int
				json.Unmarshal(stepOf(r, "each").Output, &outs)
				if len(outs) != 40 || outs[3] != nil || outs[17] != nil || outs[5] == nil || *outs[5] != 50 {
					t.Fatalf("outputs %s", stepOf(r, "each").Output)
				}
				if m.Failed != 2 || m.Completed != 38 || len(m.Errors) != 2 {
					t.Fatalf("progress %+v", m)
				}
				return
			}
			if r.Error == nil || r.Error.Step != "each" || !strings.Contains(r.Error.Message, "broke") {
				t.Fatalf("run error %+v", r.Error)
			}
		})
	}
}

func TestMapRejectsBadItems(t *testing.T) {
	for _, c := range []struct{ name, fetch, want string }{
		{"not an array", `{"items": 3}`, "not an array"},
		{"too many", fmt.Sprintf(`{"items": [%s0]}`, strings.Repeat("0,", cairn.MaxMapItems)), "over the limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, wallClock(), withWorkflows("w", mapWorkflow(5, 0)))
			e := h.e
			run := mustStart(t, e, "mapper", `{}`)
			completeNext(t, e, c.fetch)
			r := getRun(t, e, run)
			if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassRenderError || !strings.Contains(r.Error.Message, c.want) {
				t.Fatalf("run %s %+v", r.Status, r.Error)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		h := newHarness(t, wallClock(), withWorkflows("w", mapWorkflow(5, 0)))
		e := h.e
		run := mustStart(t, e, "mapper", `{}`)
		completeNext(t, e, `{"items": []}`)
		completeNext(t, e, `"x"`)
		r := getRun(t, e, run)
		if r.Status != cairn.RunCompleted || string(stepOf(r, "each").Output) != "[]" {
			t.Fatalf("run %s each %s", r.Status, stepOf(r, "each").Output)
		}
	})
}

var _ = blob.ErrNotFound

// An instance abandoned mid-map: it holds item leases it never answers,
// and it commits the last item but dies before collecting (its flows
// closed). Another instance's reaper recovers the items' leases (each
// item re-offered, no retry budget spent) and collects the outputs.
func TestMapSurvivesAnAbandonedInstance(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			clk := newClock()
			cfg := Config{Now: clk.Now}
			a := newTestEngine(t, store, cfg)
			b := newTestEngine(t, store, cfg)
			register(t, a, "w", mapWorkflow(3, 0))
			run := mustStart(t, a, "mapper", `{"tag": "t"}`)
			completeNext(t, a, `{"items": [0, 1, 2, 3, 4]}`)
			// a claims three items and is abandoned with them.
			held, err := a.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 3})
			if err != nil || len(held) != 3 {
				t.Fatalf("claimed %d: %v", len(held), err)
			}
			a.flows.Close()
			clk.Advance(b.cfg.LeaseTTL + b.cfg.RecoveryWindow + 5*time.Second)
			if _, err := b.Reap(ctx); err != nil {
				t.Fatal(err)
			}
			// b's workers finish every item; a commits the last one.
			for i := 0; ; i++ {
				if i > 20 {
					t.Fatal("items never finished")
				}
				eng := b
				r := getRun(t, b, run)
				if m := stepOf(r, "each").Map; m.Completed == 4 {
					eng = a
				} else if m.Completed == 5 {
					break
				}
				ls, err := eng.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1})
				if err != nil || len(ls) != 1 {
					t.Fatalf("claim: %d %v (progress %+v)", len(ls), err, stepOf(r, "each").Map)
				}
				l := ls[0]
				if _, err := eng.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(fmt.Sprint(*l.Item * 10))}); err != nil {
					t.Fatal(err)
				}
			}
			r := getRun(t, b, run)
			if s := stepOf(r, "each"); s.Status != cairn.StepMapping {
				t.Fatalf("each %s before the reaper collects", s.Status)
			}
			clk.Advance(5 * time.Second)
			if _, err := b.Reap(ctx); err != nil {
				t.Fatal(err)
			}
			r = getRun(t, b, run)
			if s := stepOf(r, "each"); s.Status != cairn.StepCompleted || string(s.Output) != `[0,10,20,30,40]` {
				t.Fatalf("each %s %s", s.Status, s.Output)
			}
			// The abandoned leases answer fenced: their items were re-run.
			for _, l := range held {
				if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`-1`)}); err == nil {
					t.Fatalf("abandoned lease of item %d completed", *l.Item)
				}
			}
		})
	}
}

// A map that is the run's first step starts inside StartRun (not through
// the committer): its items object is written there too. An item that
// fails with a fatal error fails the map at once.
func TestMapAsFirstStepAndFatalItem(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", cairn.Workflow{Name: "items", Version: "1", Steps: []cairn.Step{{ID: "each", Kind: cairn.KindMap, Items: "input.xs", MaxConcurrency: 5}}}))
	e := h.e
	run := mustStart(t, e, "items", `{"xs": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}`)
	ctx := context.Background()
	for i := 0; i < 30 && !getRun(t, e, run).Status.Terminal(); i++ {
		ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 5})
		if err != nil || len(ls) == 0 {
			t.Fatalf("claim: %d %v", len(ls), err)
		}
		for _, l := range ls {
			if string(l.Input) == "13" {
				if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassFatal, Message: "unlucky"}}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: l.Input}); err != nil {
				wantReason(t, err, cairn.ReasonRunTerminal) // the map failed meanwhile
			}
		}
	}
	r := getRun(t, e, run)
	if r.Status != cairn.RunFailed || r.Error.Step != "each" || !strings.Contains(r.Error.Message, "item 13 failed: unlucky") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
}

// A complete whose answer was lost is sent again: the item has left the
// record, and the retry answers already_applied (its own complete won),
// not fenced.
func TestMapItemCompleteRetriedIsAlreadyApplied(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", mapWorkflow(3, 0)))
	ctx, e := h.ctx, h.e
	mustStart(t, e, "mapper", `{"tag": "t"}`)
	completeNext(t, e, `{"items": [1, 2, 3, 4]}`)
	l := claimOne(t, e, "w")
	if l.Item == nil || l.Step != "each" {
		t.Fatalf("lease %s item %v", l.Step, l.Item)
	}
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)})
	wantReason(t, err, cairn.ReasonAlreadyApplied)
}

// BenchmarkMap runs one map step over 1,000 and 10,000 items (max
// concurrency 100, 32 in-process workers claiming 8 at a time) on the
// file store and on a store with GCS's shape (faults.GCS scaled by 0.2:
// 16–140 ms writes, 5 writes/s per object), and reports the blob
// requests per item by class, the run record's writes per item and the
// wall time:
//
//	go test ./engine -run '^$' -bench BenchmarkMap -benchtime 1x
func BenchmarkMap(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) *blob.Bucket
	}{
		{"file", func(b *testing.B) *blob.Bucket {
			s, err := file.New(b.TempDir(), file.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"gcs", func(b *testing.B) *blob.Bucket { s, _ := faults.Wrap(mem.New(), faults.GCS.Scaled(0.2)); return s }},
	}
	for _, st := range stores {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/items=%d", st.name, n), func(b *testing.B) {
				for range b.N {
					benchMapOnce(b, st.open(b), n)
				}
			})
		}
	}
}

func benchMapOnce(b *testing.B, store *blob.Bucket, n int) {
	ctx := context.Background()
	counted, counts := counting.Wrap(store)
	e := newTestEngine(b, counted, Config{})
	register(b, e, "w", cairn.Workflow{Name: "bmap", Version: "1", Steps: []cairn.Step{
		{ID: "each", Kind: cairn.KindMap, Items: "input.xs", MaxConcurrency: 100},
	}})
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	input := string(object.JSON(map[string]any{"xs": xs}))
	counts.Reset()
	began := time.Now()
	run := mustStart(b, e, "bmap", input)
	var wg sync.WaitGroup
	var done sync.Once
	finished := make(chan struct{})
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-finished:
					return
				default:
				}
				ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 8, WaitMs: 100})
				if err != nil {
					b.Error(err)
					return
				}
				if len(ls) == 0 {
					if r, err := e.readRun(ctx, run); err == nil && r.Status.Terminal() {
						done.Do(func() { close(finished) })
					}
					continue
				}
				for _, l := range ls {
					for try := 0; ; try++ {
						_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(fmt.Sprint(*l.Item * 2))})
						if _, rej := IsRejection(err); err == nil || rej || try > 20 {
							break
						}
						spend(20 * time.Millisecond) // the backoff
					}
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	r, err := e.readRun(ctx, run)
	if err != nil || r.Status != cairn.RunCompleted {
		b.Fatalf("run %v %v", r.Status, err)
	}
	c := counts.Snapshot()
	per := func(v int64) float64 { return float64(v) / float64(n) }
	b.ReportMetric(took.Seconds(), "s/map")
	b.ReportMetric(per(c.Get+c.Stat), "GET/item")
	b.ReportMetric(per(c.Create), "create/item")
	b.ReportMetric(per(c.Swap), "CAS/item")
	b.ReportMetric(per(c.Put), "PUT/item")
	b.ReportMetric(per(c.List), "LIST/item")
	b.ReportMetric(per(c.Total()), "req/item")
	b.ReportMetric(float64(n)/float64(r.Rev), "items/record-write")
	b.ReportMetric(float64(len(object.JSON(r))), "record-bytes")
}
