package engine

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
)

// twoWaits is a workflow whose two waits for "go" begin after its task a.
var twoWaits = cairn.Workflow{Name: "two", Version: "1", Steps: []cairn.Step{
	{ID: "a"},
	{ID: "w1", Kind: cairn.KindWait, Event: "go", After: []string{"a"}},
	{ID: "w2", Kind: cairn.KindWait, Event: "go", After: []string{"a"}},
}}

// send sends event name (with payload) to run, which must accept it.
func (h *harness) send(run, name, payload string) *cairn.EventResult {
	h.t.Helper()
	req := cairn.EventRequest{Name: name}
	if payload != "" {
		req.Payload = json.RawMessage(payload)
	}
	res, err := h.e.SendEvent(h.ctx, run, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// wantWaits checks which of twoWaits' waits completed, with what output.
func wantWaits(t *testing.T, r *cairn.Run, w1, w2 string) {
	t.Helper()
	for step, want := range map[string]string{"w1": w1, "w2": w2} {
		st := stepOf(r, step)
		switch {
		case want == "" && st.Status != cairn.StepWaiting:
			t.Fatalf("%s is %s, want still waiting (%+v)", step, st.Status, r.Steps)
		case want != "" && (st.Status != cairn.StepCompleted || string(st.Output) != want):
			t.Fatalf("%s is %s with %s, want completed with %s", step, st.Status, st.Output, want)
		}
	}
}

// TestEventTakenByOneWait: an event is seen by exactly one wait, whether
// it comes while two waits for it wait or before they begin; the next
// event of the name goes to the other.
func TestEventTakenByOneWait(t *testing.T) {
	t.Run("while waiting", func(t *testing.T) {
		h := newHarness(t, withWorkflows("w", twoWaits))
		run := h.start("two", `{}`)
		h.complete(h.claim("w").ID, `1`)
		if res := h.send(run, "go", `"first"`); len(res.Resumed) != 1 || res.Resumed[0] != "w1" || res.Recorded {
			t.Fatalf("first event: %+v", res)
		}
		wantWaits(t, h.run(run), `"first"`, "")
		if res := h.send(run, "go", `"second"`); len(res.Resumed) != 1 || res.Resumed[0] != "w2" {
			t.Fatalf("second event: %+v", res)
		}
		wantWaits(t, h.run(run), `"first"`, `"second"`)
	})
	t.Run("before waiting", func(t *testing.T) {
		h := newHarness(t, withWorkflows("w", twoWaits))
		run := h.start("two", `{}`)
		if res := h.send(run, "go", `"first"`); !res.Recorded || len(res.Resumed) != 0 {
			t.Fatalf("early event: %+v", res)
		}
		h.complete(h.claim("w").ID, `1`)
		r := h.run(run)
		wantWaits(t, r, `"first"`, "")
		if len(r.PendingEvents) != 0 {
			t.Fatalf("the event is still pending after a wait took it: %v", r.PendingEvents)
		}
		h.send(run, "go", `"second"`)
		wantWaits(t, h.run(run), `"first"`, `"second"`)
	})
}

// choice waits, after its task t, for approve or reject of its input's
// order.
var choice = cairn.Workflow{Name: "choice", Version: "1", Steps: []cairn.Step{
	{ID: "t"},
	{ID: "w", Kind: cairn.KindWait, Events: []string{"approve", "reject"}, If: "event.payload.order == input.order", After: []string{"t"}},
}}

// TestWaitForAnyEvent: a wait of several events takes the first that
// matches its if, kept or sent while it waits; its output says which
// came; the events it does not take stay kept.
func TestWaitForAnyEvent(t *testing.T) {
	t.Run("kept", func(t *testing.T) {
		h := newHarness(t, withWorkflows("w", choice))
		run := h.start("choice", `{"order": 1}`)
		h.send(run, "approve", `{"order": 2}`)
		h.send(run, "other", `{}`)
		h.send(run, "approve", `{}`) // its if fails: not taken
		h.send(run, "reject", `{"order": 1}`)
		h.complete(h.claim("w").ID, `1`)
		r := h.run(run)
		if st := stepOf(r, "w"); st.Status != cairn.StepCompleted || string(st.Output) != `{"event":"reject","id":"","payload":{"order":1}}` {
			t.Fatalf("w: %s %s", st.Status, st.Output)
		}
		if got := r.PendingEvents; len(got) != 3 || got[0] != "approve" || got[1] != "other" || got[2] != "approve" {
			t.Fatalf("pending %v, want the three events w did not take", got)
		}
	})
	t.Run("while waiting", func(t *testing.T) {
		h := newHarness(t, withWorkflows("w", choice))
		run := h.start("choice", `{"order": 1}`)
		h.complete(h.claim("w").ID, `1`)
		if res := h.send(run, "approve", `{"order": 2}`); !res.Recorded {
			t.Fatalf("an event the if refuses: %+v", res)
		}
		res, err := h.e.SendEvent(h.ctx, run, cairn.EventRequest{Name: "approve", ID: "e7", Payload: json.RawMessage(`{"order": 1}`)})
		if err != nil || len(res.Resumed) != 1 {
			t.Fatalf("the matching event: %+v %v", res, err)
		}
		if st := stepOf(h.run(run), "w"); string(st.Output) != `{"event":"approve","id":"e7","payload":{"order":1}}` {
			t.Fatalf("w: %s %s", st.Status, st.Output)
		}
	})
}

// TestWaitValidation: a wait's event options and if are checked at
// registration, naming the field.
func TestWaitValidation(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		step  cairn.Step
		field string
	}{
		{cairn.Step{ID: "w", Kind: cairn.KindWait, Event: "a", Events: []string{"b"}}, "workflows[0].steps[0].events"},
		{cairn.Step{ID: "w", Kind: cairn.KindWait, Events: []string{"a", "a"}}, "workflows[0].steps[0].events[1]"},
		{cairn.Step{ID: "w", Kind: cairn.KindWait, Event: "a", If: "event.payload +"}, "workflows[0].steps[0].if"},
		{cairn.Step{ID: "w", Kind: cairn.KindWait, Event: "a", If: "nosuch.x"}, "workflows[0].steps[0].if"},
		{cairn.Step{ID: "w", If: "true"}, "workflows[0].steps[0].if"},
		{cairn.Step{ID: "w", When: "event.name == 'a'"}, "workflows[0].steps[0].when"}, // only an if sees event
	} {
		_, err := h.e.Register(h.ctx, cairn.RegisterRequest{WorkerID: "w", Workflows: []cairn.Workflow{single("v", c.step)}})
		var ve cairn.ValidationError
		if !errors.As(err, &ve) || ve[0].Field != c.field {
			t.Errorf("%+v: %v, want an error of field %s", c.step, err, c.field)
		}
	}
}

// orders are the workflows a published order.created event may start: big
// (if total > 100), every (no if) and none (no trigger).
func orders() []cairn.Workflow {
	on := func(name, cond string) cairn.Workflow {
		w := single(name, cairn.Step{Input: json.RawMessage(`"${input.total}"`)})
		if cond != "-" {
			w.On = []cairn.Trigger{{Event: "order.created", If: cond}}
		}
		return w
	}
	return []cairn.Workflow{on("big", "event.payload.total > 100 && event.name == 'order.created'"), on("every", ""), on("none", "-")}
}

// publish publishes event name with payload and id, which must be accepted.
func (h *harness) publish(e *Engine, name, payload, id string) *cairn.PublishResult {
	h.t.Helper()
	res, err := e.Publish(h.ctx, cairn.PublishRequest{Name: name, Payload: json.RawMessage(payload), ID: id})
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// runsOf is which workflow's run each of res's runs is ("big:new").
func runsOf(res *cairn.PublishResult) []string {
	var out []string
	for _, r := range res.Runs {
		how := "new"
		if r.Existed {
			how = "existed"
		}
		out = append(out, r.Workflow+":"+how)
	}
	return out
}

// TestPublish: a published event starts a run of each workflow whose
// newest version has a trigger it matches, with the payload as input and
// the event on the run, once per event id; a newer version without the
// trigger takes no more events.
func TestPublish(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		if got := runsOf(h.publish(h.e, "order.created", `{"total": 50}`, "")); !slices.Equal(got, []string{"every:new"}) {
			t.Fatalf("small order started %v", got)
		}
		res := h.publish(h.e, "order.created", `{"total": 500}`, "o2")
		if got := runsOf(res); res.ID != "o2" || !slices.Equal(got, []string{"big:new", "every:new"}) {
			t.Fatalf("big order: %+v", res)
		}
		r := h.run(res.Runs[0].Run)
		if r.Event == nil || *r.Event != (cairn.EventRef{Name: "order.created", ID: "o2"}) || string(r.Input) != `{"total":500}` {
			t.Fatalf("run %+v of the event has event %+v", r.Input, r.Event)
		}
		again := h.publish(h.e, "order.created", `{"total": 500}`, "o2")
		if got := runsOf(again); !slices.Equal(got, []string{"big:existed", "every:existed"}) || again.Runs[0].Run != res.Runs[0].Run {
			t.Fatalf("a retried publish: %+v", again)
		}
		if got := runsOf(h.publish(h.e, "order.shipped", `{}`, "")); len(got) != 0 {
			t.Fatalf("an event no trigger names started %v", got)
		}
		v2 := single("every", cairn.Step{})
		v2.Version = "2"
		register(t, h.e, "w", v2)
		if got := runsOf(h.publish(h.e, "order.created", `{"total": 500}`, "o3")); !slices.Equal(got, []string{"big:new"}) {
			t.Fatalf("after every@2 dropped its trigger: %v", got)
		}
	}, withWorkflows("w", orders()...))
}

// TestPublishConcurrently: two instances publishing one event id at once
// start one run per workflow, and answer the same runs.
func TestPublishConcurrently(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		es := h.instances(2)
		var res [2]*cairn.PublishResult
		var wg sync.WaitGroup
		for i := range es {
			wg.Go(func() { res[i] = h.publish(es[i], "order.created", `{"total": 500}`, "dup") })
		}
		wg.Wait()
		if len(res[0].Runs) != 2 || len(res[1].Runs) != 2 {
			t.Fatalf("answers %+v %+v", res[0], res[1])
		}
		for i := range 2 {
			a, b := res[0].Runs[i], res[1].Runs[i]
			if a.Run != b.Run || a.Existed && b.Existed {
				t.Fatalf("workflow %s: runs %+v and %+v, want one run that one publish started", a.Workflow, a, b)
			}
		}
		rows, err := h.e.ListRuns(h.ctx, ListRequest{})
		if err != nil || len(rows.Runs) != 2 {
			t.Fatalf("runs %+v %v, want 2", rows, err)
		}
	}, withWorkflows("w", orders()...))
}

// TestPublishRequests: what a publish costs the store, caches warm: one
// LIST, then per triggered workflow a start under its idempotency key
// (a retried publish: the key's read and the run's).
func TestPublishRequests(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", orders()...))
	h.publish(h.e, "order.created", `{"total": 500}`, "warm") // the catalog's reads
	h.e.Settle()
	for _, c := range []struct {
		id   string
		want counting.Snapshot
	}{
		{"first", counting.Snapshot{List: 1, Create: 4, Put: 2}},
		{"first", counting.Snapshot{List: 1, Create: 2, Get: 4}},
	} {
		h.counts.Reset()
		h.publish(h.e, "order.created", `{"total": 500}`, c.id)
		h.e.Settle()
		if got := h.counts.Snapshot(); got != c.want {
			t.Errorf("publish %s with 2 workflows triggered: %s, want %s", c.id, got, c.want)
		}
	}
}
