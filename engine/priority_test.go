package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

func startPrio(t *testing.T, e *Engine, wf string, prio int, input string) string {
	t.Helper()
	res, err := e.StartRun(context.Background(), cairn.StartRequest{Workflow: wf, Priority: prio, Input: json.RawMessage(input)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run.ID
}

// TestPriorityOrder: with several steps ready at once, a claim is offered
// the highest effective priority first: the run's, or the step's
// override.
func TestPriorityOrder(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		e := h.e
		urgent := 50
		wf := cairn.Workflow{Name: "p", Version: "1", Steps: []cairn.Step{
			{ID: "plain"},
			{ID: "urgent", Priority: &urgent},
		}}
		register(t, e, "w", wf)
		low := startPrio(t, e, "p", -5, `"low"`)
		mid := startPrio(t, e, "p", 0, `"mid"`)
		high := startPrio(t, e, "p", 10, `"high"`)
		var got []string
		for range 6 {
			l := claimOne(t, e, "w")
			got = append(got, l.Run+"/"+l.Step)
		}
		// The three urgent steps (priority 50) first, then the plain
		// steps by run priority.
		for i := range 3 {
			if got[i][len(got[i])-len("urgent"):] != "urgent" {
				t.Fatalf("claim %d was %s, want an urgent step first: %v", i, got[i], got)
			}
		}
		want := []string{high + "/plain", mid + "/plain", low + "/plain"}
		for i, w := range want {
			if got[3+i] != w {
				t.Fatalf("claim %d was %s, want %s (order %v)", 3+i, got[3+i], w, got)
			}
		}
		if r := getRun(t, e, high); r.Priority != 10 {
			t.Fatalf("run view priority %d, want 10", r.Priority)
		}
	})
}

// TestPriorityAgingBoundsStarvation: a low-priority step that has waited
// longer than (q-p)×PriorityAging is offered before a fresh step of
// priority q; before that, the fresh higher one goes first.
func TestPriorityAgingBoundsStarvation(t *testing.T) {
	h := newHarness(t, withConfig(Config{PriorityAging: time.Second}), withWorkflows("w", single("s", cairn.Step{})))
	clk, e := h.clk, h.e
	low := startPrio(t, e, "s", 0, `1`)
	clk.Advance(2 * time.Second)
	high := startPrio(t, e, "s", 3, `2`)
	if l := claimOne(t, e, "w"); l.Run != high {
		t.Fatalf("after 2 s the priority-3 step should still go first (0+2 < 3)")
	}
	clk.Advance(2 * time.Second) // low has waited 4 s: effective 4
	high2 := startPrio(t, e, "s", 3, `3`)
	if l := claimOne(t, e, "w"); l.Run != low {
		t.Fatalf("claimed %s, want the aged low-priority run %s (0+4 > 3)", l.Run, low)
	}
	if l := claimOne(t, e, "w"); l.Run != high2 {
		t.Fatalf("claimed %s, want %s", l.Run, high2)
	}
}

// TestPriorityRange: a priority outside [-100, 100] is refused, naming the
// field; so is a step override.
func TestPriorityRange(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("s", cairn.Step{})))
	e := h.e
	_, err := e.StartRun(context.Background(), cairn.StartRequest{Workflow: "s", Priority: 101})
	var inv *InvalidError
	if !asInvalid(err, &inv) || inv.Field != "priority" {
		t.Fatalf("got %v, want an invalid priority", err)
	}
	bad := 1000
	w := single("x", cairn.Step{Priority: &bad})
	err = w.Validate("workflows[0]")
	if err == nil || err.Error() != "workflows[0].steps[0].priority: step only: must be between -100 and 100" {
		t.Fatalf("got %v", err)
	}
}
