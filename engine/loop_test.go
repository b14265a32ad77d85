package engine

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
)

// reviewLoop is prep → draft → review → publish, review routing back to
// draft while its output says not ok, at most maxVisits times. draft's
// input shows its own loop's visits through review's, and prep's.
func reviewLoop(maxVisits int) cairn.Workflow {
	return cairn.Workflow{Name: "loop", Version: "1", Steps: []cairn.Step{
		{ID: "prep"},
		{ID: "draft", After: []string{"prep"}, Input: json.RawMessage(`{"prep": "${steps.prep.visits}"}`)},
		{ID: "review", After: []string{"draft"}, Input: json.RawMessage(`{"draft": "${steps.draft.visits}"}`),
			Next: []cairn.Route{{To: "draft", If: "!steps.review.output.ok && steps.review.visits < 100"}}, MaxVisits: maxVisits},
		{ID: "publish", After: []string{"review"}, Input: json.RawMessage(`{"reviews": "${steps.review.visits}"}`)},
	}}
}

// claimStep claims the next lease, which must be of step, and returns its
// input.
func claimStep(t *testing.T, h *harness, step string) (cairn.Lease, string) {
	t.Helper()
	l := h.claim("w")
	if l.Step != step {
		t.Fatalf("claimed %s, want %s", l.Step, step)
	}
	return l, string(l.Input)
}

// TestLoopRunsUntilItsConditionFails: review sends the run back to draft
// twice, then lets it go on; each visit's attempts are new (draft's third
// visit is its attempt 3), templates see the visits, the view counts them
// and the journal has a step_looped entry per loop.
func TestLoopRunsUntilItsConditionFails(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := h.start("loop", "")
		l, _ := claimStep(t, h, "prep")
		h.complete(l.ID, `1`)
		for visit := 1; visit <= 3; visit++ {
			l, in := claimStep(t, h, "draft")
			if in != `{"prep":1}` || l.Attempt != visit {
				t.Fatalf("draft's visit %d: attempt %d, input %s", visit, l.Attempt, in)
			}
			h.complete(l.ID, fmt.Sprintf(`{"v": %d}`, visit))
			l, in = claimStep(t, h, "review")
			if in != fmt.Sprintf(`{"draft":%d}`, visit) {
				t.Fatalf("review's visit %d: input %s", visit, in)
			}
			h.complete(l.ID, fmt.Sprintf(`{"ok": %t}`, visit == 3))
		}
		l, in := claimStep(t, h, "publish")
		if in != `{"reviews":3}` {
			t.Fatalf("publish's input %s", in)
		}
		h.complete(l.ID, `1`)
		r := h.run(run)
		if r.Status != cairn.RunCompleted {
			t.Fatalf("run %s: %+v", r.Status, r.Error)
		}
		for step, want := range map[string]int{"prep": 1, "draft": 3, "review": 3, "publish": 1} {
			if got := stepOf(r, step).Visits; got != want {
				t.Errorf("step %s: %d visits, want %d", step, got, want)
			}
		}
		if n := len(stepOf(r, "draft").Attempts); n != 3 {
			t.Errorf("draft has %d attempts, want 3 (one per visit)", n)
		}
		if n := countJournal(t, h.e, run, cairn.JournalStepLooped, "review"); n != 2 {
			t.Errorf("%d step_looped entries, want 2", n)
		}
	}, withWorkflows("w", reviewLoop(5)))
}

// TestLoopLimitFailsTheRun: a route past max_visits fails the step and the
// run with class loop_limit, naming the limit.
func TestLoopLimitFailsTheRun(t *testing.T) {
	h := newHarness(t, withWorkflows("w", reviewLoop(2)))
	run := h.start("loop", "")
	l, _ := claimStep(t, h, "prep")
	h.complete(l.ID, `1`)
	for range 2 {
		l, _ = claimStep(t, h, "draft")
		h.complete(l.ID, `1`)
		l, _ = claimStep(t, h, "review")
		h.complete(l.ID, `{"ok": false}`)
	}
	r := h.run(run)
	if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassLoopLimit || r.Error.Step != "review" {
		t.Fatalf("run %s, error %+v; want failed with loop_limit at review", r.Status, r.Error)
	}
	if st := stepOf(r, "review"); st.Status != cairn.StepFailed || st.Visits != 2 {
		t.Fatalf("review: %s after %d visits", st.Status, st.Visits)
	}
	if want := "step review routed back to draft after its visit 2: its max_visits is 2"; r.Error.Message != want {
		t.Fatalf("error %q, want %q", r.Error.Message, want)
	}
}

// TestLoopRequests: a loop back costs no request of its own: the complete
// that routes back is the one swap of the run record it always was, and
// the next visit's first attempt one lease create.
func TestLoopRequests(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", reviewLoop(5)))
	h.start("loop", "")
	l, _ := claimStep(t, h, "prep")
	h.complete(l.ID, `1`)
	l, _ = claimStep(t, h, "draft")
	h.complete(l.ID, `1`)
	l, _ = claimStep(t, h, "review")
	h.e.Settle()
	h.counts.Reset()
	h.complete(l.ID, `{"ok": false}`)
	l, _ = claimStep(t, h, "draft")
	h.e.Settle()
	if got, want := h.counts.Snapshot(), (counting.Snapshot{Create: 1, Swap: 1}); got != want {
		t.Errorf("a loop back and the next visit's claim: %s, want %s", got, want)
	}
}
