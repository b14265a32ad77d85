package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/faults"
)

// Debounce and batch windows (engine/internal/gate): several instances
// publish and reap at once; every event is in exactly one run.

func windowed(d *cairn.Debounce, b *cairn.EventBatch) cairn.Workflow {
	return cairn.Workflow{Name: "gated", Version: "1", Steps: []cairn.Step{{ID: "act"}}, On: []cairn.Trigger{{Event: "ping"}}, Debounce: d, Batch: b}
}

// ping publishes event id with payload {"k": key, "i": i} on e.
func ping(t testing.TB, e *Engine, id, key string, i int) {
	t.Helper()
	res, err := e.Publish(t.Context(), cairn.PublishRequest{Name: "ping", ID: id, Payload: json.RawMessage(fmt.Sprintf(`{"k":%q,"i":%d}`, key, i))})
	if err != nil {
		t.Fatalf("publish %s: %v", id, err)
	}
	if len(res.Runs) != 1 || res.Runs[0].Window == "" || res.Runs[0].Run != "" {
		t.Fatalf("publish %s answered %+v: want the window it joined, no run", id, res.Runs)
	}
}

// pingFromEach publishes per events from each instance at once (ids
// <prefix><instance>-<n>, values numbered across instances); wait returns
// when all are published.
func pingFromEach(t testing.TB, es []*Engine, prefix string, per int) (wait func()) {
	var wg sync.WaitGroup
	for j, e := range es {
		wg.Go(func() {
			for i := range per {
				ping(t, e, fmt.Sprintf("%s%d-%d", prefix, j, i), "", j*per+i)
			}
		})
	}
	return wg.Wait
}

// reapAll runs a reaper pass on every instance at once, n times, the
// clock moved by step before each.
func reapAll(t testing.TB, h *harness, es []*Engine, n int, step time.Duration) {
	t.Helper()
	for range n {
		h.clk.Advance(step)
		var wg sync.WaitGroup
		for _, e := range es {
			wg.Go(func() {
				if _, err := e.Reap(t.Context()); err != nil {
					t.Errorf("reap: %v", err)
				}
			})
		}
		wg.Wait()
	}
}

// windowRuns returns the inputs of the runs of workflow gated, by the id of
// the event each names.
func windowRuns(t testing.TB, e *Engine) map[string]json.RawMessage {
	t.Helper()
	page, err := e.ListRuns(t.Context(), ListRequest{Workflow: "gated", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, s := range page.Runs {
		r := getRun(t, e, s.ID)
		if r.Event == nil {
			t.Fatalf("run %s names no event", r.ID)
		}
		if _, dup := out[r.Event.ID]; dup {
			t.Fatalf("two runs for event %s", r.Event.ID)
		}
		out[r.Event.ID] = r.Input
	}
	return out
}

// A debounced key starts one run per quiet period, with the last event's
// payload; keys are apart; an event within the period defers the run.
func TestDebounceOneRunPerQuietPeriod(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		es := h.instances(3)
		register(t, h.e, "w", windowed(&cairn.Debounce{Key: "event.payload.k", Period: cairn.Duration(3 * time.Second), Timeout: cairn.Duration(time.Minute)}, nil))
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() { ping(t, es[i%3], fmt.Sprintf("a%d", i), "a", i) })
		}
		wg.Wait()
		for i := range 4 { // b in publish order: b3 last
			h.clk.Advance(time.Millisecond)
			ping(t, es[i%3], fmt.Sprintf("b%d", i), "b", i)
		}
		reapAll(t, h, es, 2, time.Second)
		ping(t, es[1], "a-late", "a", 100) // 2 s on: a's quiet period starts again
		if runs := windowRuns(t, h.e); len(runs) != 0 {
			t.Fatalf("runs before any quiet period: %v", runs)
		}
		reapAll(t, h, es, 8, time.Second)
		runs := windowRuns(t, h.e)
		if len(runs) != 2 || string(runs["a-late"]) != `{"k":"a","i":100}` || string(runs["b3"]) != `{"k":"b","i":3}` {
			t.Fatalf("runs %s: want one for a (a-late) and one for b (b3)", runs)
		}
		ping(t, es[2], "a-again", "a", 200) // a new quiet period of a
		reapAll(t, h, es, 8, time.Second)
		if runs := windowRuns(t, h.e); len(runs) != 3 || string(runs["a-again"]) != `{"k":"a","i":200}` {
			t.Fatalf("runs %s: want a third, for a-again", runs)
		}
	})
}

// checkBatches checks that the runs' inputs hold each of n events (their
// payloads' i) exactly once, at most size per run, in publish order.
func checkBatches(t testing.TB, runs map[string]json.RawMessage, n, size int) {
	t.Helper()
	seen := map[int]bool{}
	for ev, in := range runs {
		var list []struct{ I int }
		if err := json.Unmarshal(in, &list); err != nil || len(list) == 0 || len(list) > size {
			t.Fatalf("run of %s: input %s, want a list of 1 to %d payloads", ev, in, size)
		}
		for _, p := range list {
			if seen[p.I] {
				t.Fatalf("event %d in two batches", p.I)
			}
			seen[p.I] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d events in batches, want %d", len(seen), n)
	}
}

// Three instances publish while three reap and the clock runs: every
// event is in exactly one batch, none over max_size.
func TestBatchEveryEventOnceUnderRaces(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		es := h.instances(3)
		register(t, h.e, "w", windowed(nil, &cairn.EventBatch{MaxSize: 5, Timeout: cairn.Duration(4 * time.Second)}))
		const per = 20
		wait := pingFromEach(t, es, "e", per)
		for range 6 {
			reapAll(t, h, es, 1, 700*time.Millisecond)
		}
		wait()
		reapAll(t, h, es, 8, time.Second)
		checkBatches(t, windowRuns(t, h.e), 3*per, 5)
	})
}

// One batch window of 3 (under max_size) starts one run at its timeout,
// with the payloads in publish order.
func TestBatchAtTimeoutInPublishOrder(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		register(t, h.e, "w", windowed(nil, &cairn.EventBatch{Key: "event.payload.k", MaxSize: 10, Timeout: cairn.Duration(2 * time.Second)}))
		for i := range 3 {
			h.clk.Advance(time.Millisecond)
			ping(t, h.e, fmt.Sprintf("x%d", i), "x", i)
		}
		reapAll(t, h, []*Engine{h.e}, 6, time.Second)
		runs := windowRuns(t, h.e)
		if len(runs) != 1 || string(runs["x2"]) != `[{"k":"x","i":0},{"k":"x","i":1},{"k":"x","i":2}]` {
			t.Fatalf("runs %s: want one batch x0, x1, x2", runs)
		}
	})
}

// A firing that dies at any step — after its seal, before its runs
// start, while deleting — is finished by the next pass: a batch has each
// event in one run, a debounce one run with the last event.
func TestFiringSurvivesDeath(t *testing.T) {
	gated := func(h *harness, kind string) string { return h.e.keys.Gate("gated\x00"+kind, "") }
	deaths := map[string]func(h *harness, kind string) faults.Rule{
		"after seal": func(h *harness, kind string) faults.Rule {
			return faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: gated(h, kind) + "state", After: true, Times: 1}
		},
		"before starts": func(*harness, string) faults.Rule {
			return faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "idempotency/", Times: 1}
		},
		"deleting": func(h *harness, kind string) faults.Rule {
			return faults.Rule{Ops: []faults.Op{faults.OpDelete}, KeyPrefix: gated(h, kind), Skip: 2, Times: 1}
		},
	}
	for _, wf := range []cairn.Workflow{
		windowed(nil, &cairn.EventBatch{MaxSize: 5, Timeout: cairn.Duration(2 * time.Second)}),
		windowed(&cairn.Debounce{Period: cairn.Duration(time.Second)}, nil),
	} {
		kind := map[bool]string{true: "debounce", false: "batch"}[wf.Debounce != nil]
		for name, rule := range deaths {
			t.Run(kind+"/"+name, func(t *testing.T) {
				eachStore(t, func(t *testing.T, h *harness) {
					es := h.instances(2)
					register(t, h.e, "w", wf)
					for i := range 7 { // from one instance: one timer, so the first pass has one firing to kill
						h.clk.Advance(time.Millisecond)
						ping(t, h.e, fmt.Sprintf("d%d", i), "", i)
					}
					h.faults.Inject(rule(h, kind))
					h.clk.Advance(4 * time.Second)
					if st, _ := h.e.Reap(t.Context()); st.Errors == 0 {
						t.Fatalf("the injected death did not fail the pass: %+v", st)
					}
					reapAll(t, h, es, 6, time.Second)
					runs := windowRuns(t, h.e)
					if kind == "batch" {
						checkBatches(t, runs, 7, 5)
					} else if len(runs) != 1 || string(runs["d6"]) != `{"k":"","i":6}` {
						t.Fatalf("runs %s: want one, of the last event d6", runs)
					}
				}, withFaults(faults.Profile{}))
			})
		}
	}
}

// Writes slower than the firings' settle time: every publish checks, after
// its write, whether the window it wrote into took it, and moves to the
// next window when not; still each event in exactly one batch.
func TestBatchSlowWritesRaceFirings(t *testing.T) {
	h := newHarness(t, withFaults(faults.Profile{Write: faults.Latency{P50: 250 * time.Millisecond, P99: 300 * time.Millisecond}}))
	es := h.instances(3)
	register(t, h.e, "w", windowed(nil, &cairn.EventBatch{MaxSize: 3, Timeout: cairn.Duration(time.Second)}))
	const per = 6
	wait := pingFromEach(t, es, "s", per)
	for range 8 {
		reapAll(t, h, es, 1, time.Second)
	}
	wait()
	reapAll(t, h, es, 6, time.Second)
	checkBatches(t, windowRuns(t, h.e), 3*per, 3)
}

// A key that does not compile is refused at registration, named by field.
func TestWindowKeyCompiledAtRegistration(t *testing.T) {
	h := newHarness(t)
	_, err := h.e.Register(h.ctx, cairn.RegisterRequest{WorkerID: "w", Workflows: []cairn.Workflow{
		windowed(nil, &cairn.EventBatch{Key: "event.payload.(", MaxSize: 2, Timeout: cairn.Duration(time.Second)})}})
	var ve cairn.ValidationError
	if !errors.As(err, &ve) || ve[0].Field != "workflows[0].batch.key" {
		t.Fatalf("register: %v, want an error on workflows[0].batch.key", err)
	}
}

// A publish retried with its id after its window fired is answered with
// that window (existed) and joins no other: the event is in one run. A
// retry while its window is open is counted once in it.
func TestRetriedPublishJoinsOneWindow(t *testing.T) {
	retry := func(t *testing.T, e *Engine, id, key string, i int, want bool) {
		t.Helper()
		res, err := e.Publish(t.Context(), cairn.PublishRequest{Name: "ping", ID: id, Payload: json.RawMessage(fmt.Sprintf(`{"k":%q,"i":%d}`, key, i))})
		if err != nil || len(res.Runs) != 1 || res.Runs[0].Window == "" || res.Runs[0].Existed != want {
			t.Fatalf("publish %s again: %+v %v, want existed %v", id, res, err, want)
		}
	}
	eachStore(t, func(t *testing.T, h *harness) {
		register(t, h.e, "w", windowed(nil, &cairn.EventBatch{Key: "event.payload.k", MaxSize: 10, Timeout: cairn.Duration(2 * time.Second)}))
		ping(t, h.e, "x0", "x", 0)
		retry(t, h.e, "x0", "x", 0, false) // its window is open: in it once
		h.clk.Advance(time.Millisecond)
		ping(t, h.e, "x1", "x", 1)
		reapAll(t, h, []*Engine{h.e}, 4, time.Second)
		if runs := windowRuns(t, h.e); len(runs) != 1 || string(runs["x1"]) != `[{"k":"x","i":0},{"k":"x","i":1}]` {
			t.Fatalf("runs %s: want one batch x0, x1", runs)
		}
		retry(t, h.e, "x0", "x", 0, true) // after its window fired: that window's
		ping(t, h.e, "x2", "x", 2)
		reapAll(t, h, []*Engine{h.e}, 4, time.Second)
		if runs := windowRuns(t, h.e); len(runs) != 2 || string(runs["x2"]) != `[{"k":"x","i":2}]` {
			t.Fatalf("runs %s: want a second batch of x2 alone", runs)
		}
	})
}
