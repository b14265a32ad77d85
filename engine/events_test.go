package engine

import (
	"encoding/json"
	"testing"

	"github.com/cairn-dev/cairn"
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
