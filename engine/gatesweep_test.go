package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
)

// A fired window's objects and its events' id markers are kept the
// retention after it fired (Config.Retention), then deleted by the
// reaper through the window's timer (engine/internal/gate/sweep.go).

// sweepRetention is the retention of these tests' engines.
const sweepRetention = time.Hour

// gateObjects is every object under gates/ (keys after gates/<sha>/),
// sorted, read without counting or faults.
func gateObjects(t testing.TB, h *harness) []string {
	t.Helper()
	objs, err := h.base.ListAll(h.ctx, h.e.keys.Prefix+"gates/")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, h.e.keys.Prefix+"gates/")
		out = append(out, rest[strings.IndexByte(rest, '/')+1:])
	}
	slices.Sort(out)
	return out
}

// windowTimers counts the timers of windows (g-…).
func windowTimers(t testing.TB, h *harness) int {
	t.Helper()
	objs, err := h.base.ListAll(h.ctx, h.e.keys.TimersPrefix())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if _, name, ok := h.e.keys.ParseTimer(o.Key); ok && strings.HasPrefix(name, "g-") {
			n++
		}
	}
	return n
}

// idHashOf is the hash of event id in the keys of its event and marker,
// computed here rather than by the code under test.
func idHashOf(id string) string {
	s := sha256.Sum256([]byte(id))
	return hex.EncodeToString(s[:8])
}

// markerOf is the marker key of event id, after gates/<sha>/.
func markerOf(id string) string {
	h := idHashOf(id)
	return "ids/" + h[:2] + "/" + h
}

// keptAfterFiring is what window 1 of a key keeps after it fired, with
// the markers of ids.
func keptAfterFiring(ids ...string) []string {
	out := []string{"0000000001/fired", "0000000001/open", "state"}
	for _, id := range ids {
		out = append(out, markerOf(id))
	}
	slices.Sort(out)
	return out
}

// publishAs publishes event id of key on e and returns what it joined.
func publishAs(t testing.TB, e *Engine, id, key string, i int) cairn.TriggeredRun {
	t.Helper()
	res, err := e.Publish(t.Context(), cairn.PublishRequest{Name: "ping", ID: id, Payload: json.RawMessage(fmt.Sprintf(`{"k":%q,"i":%d}`, key, i))})
	if err != nil || len(res.Runs) != 1 || res.Runs[0].Window == "" {
		t.Fatalf("publish %s: %+v %v, want one window", id, res, err)
	}
	return res.Runs[0]
}

// A window keeps its objects and markers after it fired, and a publish
// retried with one of its ids within the retention is answered with it;
// past the retention the reaper deletes them all (the key's state
// stays), and a publish with that id then is a new event: it joins a new
// window, which starts a run of its own.
func TestWindowSweptAfterRetention(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		wf    cairn.Workflow
		first string // the run of window 1 names it
	}{
		{"batch", windowed(nil, &cairn.EventBatch{Key: "event.payload.k", MaxSize: 10, Timeout: cairn.Duration(2 * time.Second)}), "x2"},
		{"debounce", windowed(&cairn.Debounce{Key: "event.payload.k", Period: cairn.Duration(time.Second)}, nil), "x2"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			eachStore(t, func(t *testing.T, h *harness) {
				register(t, h.e, "w", tc.wf)
				ids := []string{"x0", "x1", "x2"}
				var window string
				for i, id := range ids {
					h.clk.Advance(time.Millisecond)
					window = publishAs(t, h.e, id, "x", i).Window
				}
				reapAll(t, h, []*Engine{h.e}, 4, time.Second)
				if runs := windowRuns(t, h.e); len(runs) != 1 || runs[tc.first] == nil {
					t.Fatalf("runs %s: want one, of %s", runs, tc.first)
				}
				kept := keptAfterFiring(ids...)
				if got := gateObjects(t, h); !slices.Equal(got, kept) {
					t.Fatalf("after the firing: %q, want %q", got, kept)
				}

				h.clk.Advance(sweepRetention / 2)
				h.reap()
				if got := gateObjects(t, h); !slices.Equal(got, kept) {
					t.Fatalf("within the retention: %q, want %q", got, kept)
				}
				if r := publishAs(t, h.e, "x0", "x", 0); !r.Existed || r.Window != window {
					t.Fatalf("retried within the retention: %+v, want window %s, existed", r, window)
				}

				h.clk.Advance(sweepRetention/2 + 10*time.Second)
				h.reap()
				if got := gateObjects(t, h); !slices.Equal(got, []string{"state"}) {
					t.Fatalf("past the retention: %q, want the key's state alone", got)
				}
				h.reap() // a swept window's timer is gone
				if got := gateObjects(t, h); !slices.Equal(got, []string{"state"}) {
					t.Fatalf("a second pass: %q", got)
				}

				r := publishAs(t, h.e, "x0", "x", 0)
				if r.Existed || r.Window == window {
					t.Fatalf("published again past the retention: %+v, want a new window", r)
				}
				reapAll(t, h, []*Engine{h.e}, 4, time.Second)
				runs := windowRuns(t, h.e)
				if len(runs) != 2 || runs["x0"] == nil {
					t.Fatalf("runs %s: want a second, of x0", runs)
				}
			}, withConfig(Config{Retention: sweepRetention}))
		})
	}
}

// A sweep that dies before its end — a marker's delete, the window's
// objects', the outcome's — leaves its timer due: the next pass finishes
// it, and nothing is left but the key's state.
func TestWindowSweepSurvivesDeath(t *testing.T) {
	gated := func(h *harness) string { return h.e.keys.Gate("gated\x00batch", "x") }
	deaths := map[string]func(h *harness) faults.Rule{
		"deleting a marker": func(h *harness) faults.Rule {
			return faults.Rule{Ops: []faults.Op{faults.OpDelete}, KeyPrefix: gated(h) + "ids/", Skip: 1, Times: 1}
		},
		"after the markers": func(h *harness) faults.Rule {
			return faults.Rule{Ops: []faults.Op{faults.OpDelete}, KeyPrefix: gated(h) + "0000000001/open", Times: 1}
		},
		"before the outcome": func(h *harness) faults.Rule {
			return faults.Rule{Ops: []faults.Op{faults.OpDelete}, KeyPrefix: gated(h) + "0000000001/fired", Times: 1}
		},
		"deleting the outcome": func(h *harness) faults.Rule {
			return faults.Rule{Ops: []faults.Op{faults.OpDelete}, KeyPrefix: gated(h) + "0000000001/fired", After: true, Times: 1}
		},
	}
	for name, rule := range deaths {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withFaults(faults.Profile{}), withConfig(Config{Retention: sweepRetention}))
			register(t, h.e, "w", windowed(nil, &cairn.EventBatch{Key: "event.payload.k", MaxSize: 10, Timeout: cairn.Duration(2 * time.Second)}))
			for i := range 3 {
				h.clk.Advance(time.Millisecond)
				publishAs(t, h.e, fmt.Sprint("x", i), "x", i)
			}
			reapAll(t, h, []*Engine{h.e}, 4, time.Second)
			if got, want := gateObjects(t, h), keptAfterFiring("x0", "x1", "x2"); !slices.Equal(got, want) {
				t.Fatalf("after the firing: %q, want %q", got, want)
			}
			h.faults.Inject(rule(h))
			h.clk.Advance(sweepRetention + 10*time.Second)
			if st, _ := h.e.Reap(t.Context()); st.Errors == 0 {
				t.Fatalf("the injected death did not fail the pass: %+v", st)
			}
			if windowTimers(t, h) != 1 {
				t.Fatalf("after the death: %d window timers, want the sweep's", windowTimers(t, h))
			}
			h.clk.Advance(time.Second)
			if st := h.reap(); st.Errors != 0 {
				t.Fatalf("the next pass: %+v", st)
			}
			if got := gateObjects(t, h); !slices.Equal(got, []string{"state"}) || windowTimers(t, h) != 0 {
				t.Fatalf("after the next pass: %q and %d window timers, want the key's state alone", got, windowTimers(t, h))
			}
		})
	}
}

// An event written into a window after its firing listed it, whose
// publisher died (its object stays), is deleted with the window, and so
// is its marker; the marker of an id published since into a later window
// is that window's, and stays.
func TestWindowSweepTakesLateEvents(t *testing.T) {
	h := newHarness(t, withConfig(Config{Retention: sweepRetention}))
	register(t, h.e, "w", windowed(nil, &cairn.EventBatch{Key: "event.payload.k", MaxSize: 10, Timeout: cairn.Duration(2 * time.Second)}))
	publishAs(t, h.e, "x0", "x", 0)
	reapAll(t, h, []*Engine{h.e}, 4, time.Second)
	gated := h.e.keys.Gate("gated\x00batch", "x")
	late := func(id string, n int) {
		hash := idHashOf(id)
		at := h.clk.Now()
		put := func(key, body string) {
			if _, err := h.store.Put(h.ctx, gated+key, []byte(body), blob.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		put(markerOf(id), fmt.Sprintf(`{"n":%d,"at":%q}`, n, at.Format(time.RFC3339Nano)))
		put(fmt.Sprintf("0000000001/e/%s/%013d-%s", hash[:2], at.UnixMilli(), hash), fmt.Sprintf(`{"id":%q,"name":"ping"}`, id))
	}
	late("late", 1)  // its publisher died after its write
	late("moved", 2) // published again since, into window 2
	h.clk.Advance(sweepRetention + 10*time.Second)
	if st := h.reap(); st.Errors != 0 {
		t.Fatalf("sweep: %+v", st)
	}
	if got, want := gateObjects(t, h), []string{markerOf("moved"), "state"}; !slices.Equal(got, want) {
		t.Fatalf("after the sweep: %q, want %q", got, want)
	}
}

// With a negative retention windows are kept: no sweep timer, nothing
// deleted.
func TestWindowsKeptWithoutRetention(t *testing.T) {
	h := newHarness(t, withConfig(Config{Retention: -1}))
	register(t, h.e, "w", windowed(nil, &cairn.EventBatch{MaxSize: 10, Timeout: cairn.Duration(2 * time.Second)}))
	publishAs(t, h.e, "x0", "", 0)
	reapAll(t, h, []*Engine{h.e}, 4, time.Second)
	want := keptAfterFiring("x0")
	h.clk.Advance(1000 * 24 * time.Hour)
	h.reap()
	if got := gateObjects(t, h); !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
	if n := windowTimers(t, h); n != 0 {
		t.Fatalf("%d window timers, want none", n)
	}
}

// What a window's sweep costs: at its firing 1 PUT (the sweep's timer);
// at its sweep 1 GET of its outcome, 1 LIST of its objects, per event 1
// GET and 1 DELETE of its marker, 1 DELETE each of its open object, its
// outcome and the timer: 6 + 2 per event. A pass with nothing due is its
// timer LIST alone.
func TestWindowSweepRequests(t *testing.T) {
	const events = 10
	h := newHarness(t, counted(), withConfig(Config{Retention: sweepRetention}))
	register(t, h.e, "w", windowed(nil, &cairn.EventBatch{MaxSize: 100, Timeout: cairn.Duration(2 * time.Second)}))
	for i := range events {
		h.clk.Advance(time.Millisecond)
		publishAs(t, h.e, fmt.Sprint("x", i), "", i)
	}
	reapAll(t, h, []*Engine{h.e}, 4, time.Second)
	h.e.Settle()
	page, err := h.e.ListRuns(h.ctx, ListRequest{Workflow: "gated"})
	if err != nil || len(page.Runs) != 1 {
		t.Fatalf("runs %+v %v: want one", page, err)
	}
	if err := h.e.DeleteRun(h.ctx, page.Runs[0].ID, true); err != nil { // its timers aside
		t.Fatal(err)
	}
	timers, err := h.base.ListAll(h.ctx, h.e.keys.TimersPrefix())
	if err != nil || len(timers) != 1 || windowTimers(t, h) != 1 {
		t.Fatalf("timers after the firing: %v %v, want the sweep's", timers, err)
	}

	h.clk.Advance(sweepRetention + 10*time.Second)
	h.counts.Reset()
	st := h.reap()
	got := h.counts.Snapshot()
	t.Logf("the sweep of a window of %d events: %v (and the pass's %d timer LISTs)", events, got, st.ListRequests)
	if st.Errors != 0 || got.Get != events+1 || got.List-int64(st.ListRequests) != 1 || got.Delete != events+3 || got.Writes() != 0 {
		t.Fatalf("sweep requests %v (pass %+v): want %d GET, 1 LIST, %d DELETE, no write", got, st, events+1, events+3)
	}
	if objs := gateObjects(t, h); !slices.Equal(objs, []string{"state"}) {
		t.Fatalf("after the sweep: %q", objs)
	}
	h.clk.Advance(time.Minute)
	h.counts.Reset()
	st = h.reap()
	if got := h.counts.Snapshot(); got.Total() != int64(st.ListRequests) {
		t.Fatalf("a pass after the sweep: %v, want its timer LISTs (%d) alone", got, st.ListRequests)
	}
}
