package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/link"
)

func parentChildWorkflows() []cairn.Workflow {
	return []cairn.Workflow{
		{Name: "parent", Version: "1", Steps: []cairn.Step{
			{ID: "prep"},
			{ID: "ship", Kind: cairn.KindChild, Workflow: "shipping", After: []string{"prep"}, Input: json.RawMessage(`{"order": "${steps.prep.output}"}`)},
			{ID: "done", After: []string{"ship"}, Input: json.RawMessage(`"${steps.ship.output.tracking}"`)},
		}},
		{Name: "shipping", Version: "1", Steps: []cairn.Step{
			{ID: "label", Input: json.RawMessage(`{"for": "${input.order}"}`)},
		}},
	}
}

// settleFlows waits for the work commits started on e (child starts, ends).
func settleFlows(e *Engine) { e.flows.Wait() }

func TestChildRunCompletesParent(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		e := h.e
		run := mustStart(t, e, "parent", `{}`)
		completeNext(t, e, `"o-1"`)
		settleFlows(e)
		p := getRun(t, e, run)
		child := stepOf(p, "ship").Child
		if stepOf(p, "ship").Status != cairn.StepChildRunning || child == "" {
			t.Fatalf("ship %+v", stepOf(p, "ship"))
		}
		l := claimOne(t, e, "w")
		if l.Run != child || string(l.Input) != `{"for":"o-1"}` {
			t.Fatalf("lease %s %s %s, want the child's label", l.Run, l.Step, l.Input)
		}
		if _, err := e.Complete(context.Background(), l.ID, cairn.CompleteRequest{Output: json.RawMessage(`{"tracking": "T9"}`)}); err != nil {
			t.Fatal(err)
		}
		settleFlows(e)
		l = claimOne(t, e, "w")
		if l.Run != run || l.Step != "done" || string(l.Input) != `"T9"` {
			t.Fatalf("lease %s %s %s, want the parent's done with the child's output", l.Run, l.Step, l.Input)
		}
		c := getRun(t, e, child)
		if c.Parent != run || c.ParentStep != "ship" {
			t.Fatalf("child's parent link %q %q", c.Parent, c.ParentStep)
		}
		if n := countJournal(t, e, run, cairn.JournalChildStarted, "ship"); n != 1 {
			t.Fatalf("%d child_started entries", n)
		}
	}, wallClock(), withWorkflows("w", parentChildWorkflows()...))
}

func TestChildFailureFailsParent(t *testing.T) {
	h := newHarness(t, withWorkflows("w", parentChildWorkflows()...))
	clk, e := h.clk, h.e
	run := mustStart(t, e, "parent", `{}`)
	completeNext(t, e, `"o-1"`)
	settleFlows(e)
	l := claimOne(t, e, "w")
	if _, err := e.Fail(context.Background(), l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "out_of_stock", Message: "no boxes"}}); err != nil {
		t.Fatal(err)
	}
	// out_of_stock is retryable: spend the budget.
	for range 2 {
		settleFlows(e)
		pastBackoff(t, e, clk, l.Run, "label")
		l2 := claimOne(t, e, "w")
		if _, err := e.Fail(context.Background(), l2.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "out_of_stock", Message: "no boxes"}}); err != nil {
			t.Fatal(err)
		}
	}
	settleFlows(e)
	p := getRun(t, e, run)
	if p.Status != cairn.RunFailed || p.Error == nil || p.Error.Step != "ship" || p.Error.Class != "out_of_stock" || !strings.Contains(p.Error.Message, "no boxes") {
		t.Fatalf("parent %s %+v", p.Status, p.Error)
	}
}

// pastBackoff advances clk to the end of the backoff of a step's retry:
// its attempt is then claimable.
func pastBackoff(t *testing.T, e *Engine, clk *clock, run, step string) {
	t.Helper()
	s := stepOf(getRun(t, e, run), step)
	if s.Status != cairn.StepReady || s.ReadyAt == nil {
		t.Fatalf("step %s of %s is %s (ready at %v), want ready after a backoff", step, run, s.Status, s.ReadyAt)
	}
	clk.Advance(max(0, s.ReadyAt.Sub(clk.Now())))
}

func TestCancelParentCancelsChild(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", parentChildWorkflows()...))
	e := h.e
	run := mustStart(t, e, "parent", `{}`)
	completeNext(t, e, `"o-1"`)
	settleFlows(e)
	child := stepOf(getRun(t, e, run), "ship").Child
	if _, err := e.CancelRun(context.Background(), run, "customer changed their mind"); err != nil {
		t.Fatal(err)
	}
	settleFlows(e)
	c := getRun(t, e, child)
	if c.Status != cairn.RunCancelled || !strings.Contains(c.Error.Message, "parent run") {
		t.Fatalf("child %s %+v", c.Status, c.Error)
	}
}

// An instance that dies after the child's end is committed, before it
// applies the end to the parent (here: closed, so it starts no more
// work), leaves the parent to the reaper of another instance; likewise a
// parent cancelled by an instance that dies before it cancels the child.
func TestChildLinksRecoveredByReaper(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			clk := newClock()
			a := newTestEngine(t, store, Config{Now: clk.Now})
			b := newTestEngine(t, store, Config{Now: clk.Now})
			register(t, a, "w", parentChildWorkflows()...)
			ctx := context.Background()

			// Started by a, whose flows never run: the reaper of b starts
			// the child, and only one.
			a.flows.Close()
			run := mustStart(t, a, "parent", `{}`)
			completeNext(t, a, `"o-1"`)
			if c := stepOf(getRun(t, b, run), "ship").Child; c != "" {
				t.Fatalf("child %s started by a closed instance", c)
			}
			clk.Advance(5 * time.Second)
			if _, err := b.Reap(ctx); err != nil {
				t.Fatal(err)
			}
			settleFlows(b)
			if _, err := b.Reap(ctx); err != nil { // a second pass starts no second child
				t.Fatal(err)
			}
			child := stepOf(getRun(t, b, run), "ship").Child
			if child == "" {
				t.Fatal("the reaper did not start the child")
			}
			// a completes the child's task: committed, not applied to the
			// parent.
			l := claimOne(t, a, "w")
			if l.Run != child {
				t.Fatalf("lease of %s, want child %s", l.Run, child)
			}
			if _, err := a.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`{"tracking": "T1"}`)}); err != nil {
				t.Fatal(err)
			}
			if s := stepOf(getRun(t, b, run), "ship"); s.Status != cairn.StepChildRunning {
				t.Fatalf("ship %s before the reaper", s.Status)
			}
			clk.Advance(b.cfg.ActiveCheckInterval + 5*time.Second)
			if _, err := b.Reap(ctx); err != nil {
				t.Fatal(err)
			}
			settleFlows(b)
			if s := stepOf(getRun(t, b, run), "ship"); s.Status != cairn.StepCompleted || string(s.Output) != `{"tracking":"T1"}` {
				t.Fatalf("ship %s %s after the reaper", s.Status, s.Output)
			}
		})
	}
}

func TestChildCancelRecoveredByReaper(t *testing.T) {
	store := newTestEngine(t, nil, Config{}).store
	clk := newClock()
	a := newTestEngine(t, store, Config{Now: clk.Now})
	b := newTestEngine(t, store, Config{Now: clk.Now})
	register(t, a, "w", parentChildWorkflows()...)
	ctx := context.Background()
	run := mustStart(t, a, "parent", `{}`)
	completeNext(t, a, `"o-1"`)
	settleFlows(a)
	child := stepOf(getRun(t, a, run), "ship").Child
	a.flows.Close() // a cancels the parent and dies before cancelling the child
	if _, err := a.CancelRun(ctx, run, "stop"); err != nil {
		t.Fatal(err)
	}
	if s := getRun(t, b, child).Status; s != cairn.RunRunning {
		t.Fatalf("child %s", s)
	}
	clk.Advance(b.cfg.ActiveCheckInterval + 5*time.Second)
	if _, err := b.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if s := getRun(t, b, child).Status; s != cairn.RunCancelled {
		t.Fatalf("child %s after the reaper", s)
	}
}

func TestChildOfUnknownWorkflowFails(t *testing.T) {
	e := newTestEngine(t, nil, Config{})
	wfs := parentChildWorkflows()
	register(t, e, "w", wfs[0])
	run := mustStart(t, e, "parent", `{}`)
	completeNext(t, e, `"o-1"`)
	settleFlows(e)
	p := getRun(t, e, run)
	if p.Status != cairn.RunFailed || p.Error.Step != "ship" || !strings.Contains(p.Error.Message, "shipping") {
		t.Fatalf("parent %s %+v", p.Status, p.Error)
	}
}

// TestChildThatEndsBeforeItsStartIsRecorded: a child run whose first step
// a start hands to a held claim can end before the start that made it
// records its id in the parent; the end, applied then, records the
// child's start too, so the parent's journal (and the dashboard's
// timeline, which draws a child step from it) has it, before the step's
// completion.
func TestChildThatEndsBeforeItsStartIsRecorded(t *testing.T) {
	h := newHarness(t, withWorkflows("w", parentChildWorkflows()...))
	ctx, e := h.ctx, h.e
	e.flows.Close() // no child started by the commit: this test starts it, and applies its end
	run := mustStart(t, e, "parent", `{}`)
	completeNext(t, e, `"o-1"`)
	p, err := e.readRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	st := p.Steps["ship"]
	if st.Status != cairn.StepChildRunning || st.Child == nil || st.Child.Run != "" {
		t.Fatalf("ship %+v, want a child step whose run is not started", st)
	}
	res, err := e.startRun(ctx, cairn.StartRequest{Workflow: "shipping", Input: json.RawMessage(`{"order":"o-1"}`), IdempotencyKey: link.ChildKey(run, "ship", st.Child.Attempt)},
		func(c *runRecord, _ *definition, _ time.Time) { l := linkUnder(p, "ship", ""); c.Parent = &l })
	if err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, e, "w")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`{"tracking":"T1"}`)}); err != nil {
		t.Fatal(err)
	}
	c, err := e.readRun(ctx, res.Run.ID)
	if err != nil || c.Status != cairn.RunCompleted {
		t.Fatalf("child %+v %v", c, err)
	}
	if err := e.childEnded(ctx, c); err != nil {
		t.Fatal(err)
	}
	if s := stepOf(getRun(t, e, run), "ship"); s.Status != cairn.StepCompleted || s.Child != c.ID {
		t.Fatalf("ship %s, child %q: want completed by %s", s.Status, s.Child, c.ID)
	}
	journal, err := e.Journal(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	var order []cairn.JournalType
	for _, j := range journal {
		if j.Step == "ship" {
			order = append(order, j.Type)
		}
	}
	if i := slices.Index(order, cairn.JournalChildStarted); i < 0 || i > slices.Index(order, cairn.JournalStepCompleted) {
		t.Fatalf("ship's journal %v: want child_started before step_completed", order)
	}
}
