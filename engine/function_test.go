package engine

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// fnWorkflow is a function workflow: one driver step, "main".
func fnWorkflow(name string) cairn.Workflow {
	return single(name, cairn.Step{ID: "main", Kind: cairn.KindFunction})
}

func op(seq int, kind cairn.OperationKind, id, result string) cairn.Operation {
	o := cairn.Operation{ID: id, Seq: seq, Kind: kind, Status: cairn.OpCompleted}
	if result != "" {
		o.Result = json.RawMessage(result)
	}
	return o
}

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	var ve cairn.ValidationError
	if !errors.As(err, &ve) || len(ve) == 0 || ve[0].Field != field {
		t.Fatalf("got %v, want a validation error naming %s", err, field)
	}
}

// A function's driver checkpoints its operations under its lease; a
// checkpoint sent again adds nothing; a sleep suspends the driver, which
// ends its attempt and makes the next one claimable at the sleep's end
// with the whole history in its lease; the old lease is fenced.
func TestFunctionCheckpointSuspendResume(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		register(t, e, "w1", fnWorkflow("fn"))
		run := h.start("fn", `{"n":1}`)
		l1 := h.claim("w1")
		if l1.Step != "main" || len(l1.History) != 0 {
			t.Fatalf("first lease: step %q history %v", l1.Step, l1.History)
		}
		first := []cairn.Operation{op(0, cairn.OpStep, "/a#0", `{"x":1}`), op(1, cairn.OpValue, "/now#0", `"2026-12-04T00:00:00Z"`)}
		for range 2 { // the second is a retry after a lost answer
			c, err := e.Checkpoint(ctx, l1.ID, CheckpointRequest{Operations: first})
			if err != nil || c.Operations != 2 || c.RunStatus != cairn.RunRunning {
				t.Fatalf("checkpoint: %+v %v", c, err)
			}
		}
		_, err := e.Checkpoint(ctx, l1.ID, CheckpointRequest{Operations: []cairn.Operation{op(3, cairn.OpStep, "/b#0", "1")}})
		wantField(t, err, "body.operations[0].seq") // a gap
		_, err = e.Checkpoint(ctx, l1.ID, CheckpointRequest{Operations: []cairn.Operation{op(1, cairn.OpStep, "/other#0", "1")}})
		wantField(t, err, "body.operations[0].seq") // another operation where the history has one

		until := h.clk.Now().Add(time.Hour)
		sleep := cairn.Operation{ID: "/nap#0", Seq: 2, Kind: cairn.OpSleep, Status: cairn.OpCompleted, WakeAt: &until}
		if _, err := e.Checkpoint(ctx, l1.ID, CheckpointRequest{Operations: []cairn.Operation{sleep}, Suspend: &Suspension{Until: until}}); err != nil {
			t.Fatal(err)
		}
		_, err = e.Heartbeat(ctx, l1.ID)
		wantReason(t, err, cairn.ReasonFenced)
		_, err = e.Checkpoint(ctx, l1.ID, CheckpointRequest{Operations: []cairn.Operation{op(3, cairn.OpStep, "/b#0", "1")}})
		wantReason(t, err, cairn.ReasonFenced) // a suspended driver checkpoints nothing
		st := stepOf(h.run(run), "main")
		if st.Status != cairn.StepReady || st.Attempt != 2 || st.ReadyAt == nil || !st.ReadyAt.Equal(until) || st.Failures != 0 {
			t.Fatalf("after the suspension: %+v", st)
		}
		if a := st.Attempts[0]; a.Outcome != cairn.OutcomeSuspended {
			t.Fatalf("attempt 1 ended %q, want suspended", a.Outcome)
		}
		if ls, err := e.Claim(ctx, ClaimRequest{WorkerID: "w1", Max: 1}); err != nil || len(ls) != 0 {
			t.Fatalf("claim during the sleep: %d leases, %v", len(ls), err)
		}
		h.clk.Advance(time.Hour)
		l2 := h.claim("w1")
		if l2.Attempt != 2 || len(l2.History) != 3 || l2.History[0].ID != "/a#0" || string(l2.History[0].Result) != `{"x":1}` || l2.History[2].Kind != cairn.OpSleep {
			t.Fatalf("resumed lease: attempt %d history %+v", l2.Attempt, l2.History)
		}
		h.complete(l2.ID, `"done"`)
		r := h.run(run)
		if r.Status != cairn.RunCompleted || len(stepOf(r, "main").Operations) != 3 {
			t.Fatalf("run %s, operations %v", r.Status, stepOf(r, "main").Operations)
		}
		if n := countJournal(t, e, run, cairn.JournalOperation, "main"); n != 3 {
			t.Fatalf("%d operation journal entries, want 3", n)
		}
		if n := countJournal(t, e, run, cairn.JournalStepSuspended, "main"); n != 1 {
			t.Fatalf("%d suspensions journalled, want 1", n)
		}
	})
}

// A driver whose lease the reaper recovered checkpoints nothing, and the
// next attempt's lease carries what the fenced one recorded before.
func TestFencedDriverCheckpointsNothing(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn")))
	ctx, e := h.ctx, h.e
	run := h.start("fn", "")
	l1 := h.claim("w1")
	if _, err := e.Checkpoint(ctx, l1.ID, CheckpointRequest{Operations: []cairn.Operation{op(0, cairn.OpStep, "/a#0", "1")}}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(e.cfg.LeaseTTL + e.cfg.RecoveryWindow + time.Second)
	h.reap()
	_, err := e.Checkpoint(ctx, l1.ID, CheckpointRequest{Operations: []cairn.Operation{op(1, cairn.OpStep, "/b#0", "2")}})
	wantReason(t, err, cairn.ReasonFenced)
	l2 := h.claim("w1")
	if l2.Attempt != 2 || len(l2.History) != 1 || l2.History[0].ID != "/a#0" {
		t.Fatalf("after recovery: attempt %d history %+v", l2.Attempt, l2.History)
	}
	if got := stepOf(h.run(run), "main").Operations; len(got) != 1 {
		t.Fatalf("history %+v, want the one operation recorded before the fence", got)
	}
}

// Only a function step checkpoints; nondeterminism is not retried.
func TestCheckpointOnlyForFunctionsAndNondeterminismFails(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn"), single("task", cairn.Step{})))
	ctx, e := h.ctx, h.e
	h.start("task", "")
	_, err := e.Checkpoint(ctx, h.claim("w1").ID, CheckpointRequest{})
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Field != "lease" {
		t.Fatalf("checkpoint of a task lease: %v", err)
	}
	run := h.start("fn", "")
	l := h.claim("w1")
	if l.Run != run {
		l = h.claim("w1")
	}
	if _, err := e.Fail(ctx, l.ID, FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassNondeterminism, Message: "replay reached /b#0"}}); err != nil {
		t.Fatal(err)
	}
	if r := h.run(run); r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassNondeterminism {
		t.Fatalf("run %s %+v, want failed with nondeterminism at once", r.Status, r.Error)
	}
}
