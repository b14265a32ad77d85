package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
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
			c, err := e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: first})
			if err != nil || c.Operations != 2 || c.RunStatus != cairn.RunRunning {
				t.Fatalf("checkpoint: %+v %v", c, err)
			}
		}
		_, err := e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(3, cairn.OpStep, "/b#0", "1")}})
		wantField(t, err, "body.operations[0].seq") // a gap
		_, err = e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(1, cairn.OpStep, "/other#0", "1")}})
		wantField(t, err, "body.operations[0].seq") // another operation where the history has one
		_, err = e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(2, cairn.OpStep, "/bad#0", `{"x":`)}})
		wantField(t, err, "body.operations[0].result") // not JSON

		until := h.clk.Now().Add(time.Hour)
		sleep := cairn.Operation{ID: "/nap#0", Seq: 2, Kind: cairn.OpSleep, Status: cairn.OpCompleted, WakeAt: &until}
		if _, err := e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{sleep}, Suspend: &cairn.Suspension{Until: &until}}); err != nil {
			t.Fatal(err)
		}
		_, err = e.Heartbeat(ctx, l1.ID)
		wantReason(t, err, cairn.ReasonFenced)
		_, err = e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(3, cairn.OpStep, "/b#0", "1")}})
		wantReason(t, err, cairn.ReasonFenced) // a suspended driver checkpoints nothing
		st := stepOf(h.run(run), "main")
		if st.Status != cairn.StepReady || st.Attempt != 2 || st.ReadyAt == nil || !st.ReadyAt.Equal(until) || st.Failures != 0 {
			t.Fatalf("after the suspension: %+v", st)
		}
		if a := st.Attempts[0]; a.Outcome != cairn.OutcomeSuspended {
			t.Fatalf("attempt 1 ended %q, want suspended", a.Outcome)
		}
		if ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 1}); err != nil || len(ls) != 0 {
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
	if _, err := e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(0, cairn.OpStep, "/a#0", "1")}}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(e.cfg.LeaseTTL + e.cfg.RecoveryWindow + time.Second)
	h.reap()
	_, err := e.Checkpoint(ctx, l1.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(1, cairn.OpStep, "/b#0", "2")}})
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
	_, err := e.Checkpoint(ctx, h.claim("w1").ID, cairn.CheckpointRequest{})
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Field != "lease" {
		t.Fatalf("checkpoint of a task lease: %v", err)
	}
	run := h.start("fn", "")
	l := h.claim("w1")
	if l.Run != run {
		l = h.claim("w1")
	}
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassNondeterminism, Message: "replay reached /b#0"}}); err != nil {
		t.Fatal(err)
	}
	if r := h.run(run); r.Status != cairn.RunFailed || r.Error.Class != cairn.ClassNondeterminism {
		t.Fatalf("run %s %+v, want failed with nondeterminism at once", r.Status, r.Error)
	}
}

// waitFor suspends lease l's driver until event name (or until), for
// wait operation id at seq.
func waitFor(t *testing.T, h *harness, l cairn.Lease, seq int, id, name string, until *time.Time) {
	t.Helper()
	wait := cairn.Operation{ID: id, Seq: seq, Kind: cairn.OpWait, Status: cairn.OpStarted, WakeAt: until}
	if _, err := h.e.Checkpoint(h.ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{wait}, Suspend: &cairn.Suspension{Event: name, Op: id, Until: until}}); err != nil {
		t.Fatal(err)
	}
}

func noLease(t *testing.T, h *harness, what string) {
	t.Helper()
	if ls, err := h.e.Claim(h.ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 1}); err != nil || len(ls) != 0 {
		t.Fatalf("%s: %d leases, %v; want none", what, len(ls), err)
	}
}

// A function waiting for an event: the event makes its next attempt
// claimable at once and is recorded as the wait's outcome; an event sent
// before the wait is taken when it starts; past its timeout an event is
// kept for later and the driver records the timeout; a driver that
// replayed without an outcome the engine recorded meanwhile is fenced and
// its attempt ends, the next one replaying it.
func TestFunctionWaitsForEvents(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn")))
	ctx, e := h.ctx, h.e
	run := h.start("fn", "")
	l := h.claim("w1")
	hour := h.clk.Now().Add(time.Hour)
	waitFor(t, h, l, 0, "/approve#0", "approve", &hour)
	noLease(t, h, "waiting")
	if res, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "approve", Payload: json.RawMessage(`{"by":"ann"}`)}); err != nil || len(res.Resumed) != 1 || res.Warning != "" {
		t.Fatalf("event: %+v %v", res, err)
	}
	l = h.claim("w1")
	if len(l.History) != 2 || l.History[1].Status != cairn.OpCompleted || string(l.History[1].Result) != `{"by":"ann"}` {
		t.Fatalf("after the event: %+v", l.History)
	}

	// An event that came first is taken by the wait that starts later.
	if _, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "early", Payload: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, h, l, 2, "/early#0", "early", nil)
	l = h.claim("w1")
	if len(l.History) != 4 || l.History[3].ID != "/early#0" || string(l.History[3].Result) != "1" {
		t.Fatalf("an event sent first: %+v", l.History)
	}

	// Past its timeout, the event is not the wait's: the driver records
	// the timeout.
	minute := h.clk.Now().Add(time.Minute)
	waitFor(t, h, l, 4, "/late#0", "late", &minute)
	h.clk.Advance(time.Minute)
	if res, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "late"}); err != nil || !res.Recorded {
		t.Fatalf("a late event: %+v %v", res, err)
	}
	l = h.claim("w1")
	timeout := cairn.Operation{ID: "/late#0", Seq: 5, Kind: cairn.OpWait, Status: cairn.OpFailed, Error: &cairn.ErrorInfo{Class: cairn.ClassTimeout, Message: "no event late within 1m"}}
	if _, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{timeout}}); err != nil {
		t.Fatal(err)
	}

	// The engine recorded an event's outcome that a replaying driver did
	// not see (it replayed a stale history): its checkpoint is fenced, and
	// the next attempt, claimable at once, sees the outcome.
	far := h.clk.Now().Add(time.Hour)
	waitFor(t, h, l, 6, "/again#0", "again", &far)
	if _, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "again", Payload: json.RawMessage(`2`)}); err != nil {
		t.Fatal(err)
	}
	l = h.claim("w1")
	stale := cairn.Operation{ID: "/again#0", Seq: 7, Kind: cairn.OpWait, Status: cairn.OpFailed, Error: &cairn.ErrorInfo{Class: cairn.ClassTimeout, Message: "stale"}}
	_, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{stale}})
	wantReason(t, err, cairn.ReasonFenced)
	l = h.claim("w1")
	if len(l.History) != 8 || l.History[7].Status != cairn.OpCompleted || string(l.History[7].Result) != "2" {
		t.Fatalf("after the fenced stale checkpoint: %+v", l.History)
	}
	h.complete(l.ID, `"ok"`)
	if r := h.run(run); r.Status != cairn.RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
}

// A function invokes another workflow: the run starts once (an invoke
// sent again starts no second run), its end is recorded as the
// operation's outcome (output, or error) and makes the next attempt
// claimable; a parent that ends cancels the run it invoked.
func TestFunctionInvokesARun(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn"), single("dag", cairn.Step{ID: "only"})))
	ctx, e := h.ctx, h.e
	run := h.start("fn", "")
	l := h.claim("w1")
	invoke := func(l cairn.Lease, seq int, id string) {
		t.Helper()
		started := cairn.Operation{ID: id, Seq: seq, Kind: cairn.OpInvoke, Status: cairn.OpStarted}
		sp := &cairn.Suspension{Op: id, Invoke: &cairn.Invocation{Workflow: "dag", Input: json.RawMessage(`{"n":1}`)}}
		if _, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{started}, Suspend: sp}); err != nil {
			t.Fatal(err)
		}
	}
	invoke(l, 0, "/bill#0")
	e.Settle()
	child := h.claim("w1") // the invoked run's step
	if child.Run == run || child.Step != "only" || string(child.Input) != `{"n":1}` {
		t.Fatalf("the invoked run's lease: %+v", child)
	}
	h.complete(child.ID, `{"paid":true}`)
	e.Settle()
	l = h.claim("w1")
	if l.Run != run || len(l.History) != 2 || l.History[1].Kind != cairn.OpInvoke || string(l.History[1].Result) != `{"paid":true}` {
		t.Fatalf("after the invoked run: %+v", l)
	}

	// A run that fails fails the operation with its error.
	invoke(l, 2, "/bill#1")
	e.Settle()
	child = h.claim("w1")
	if _, err := e.Fail(ctx, child.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "card_declined", Message: "no"}}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // the invoked step's retries
		h.clk.Advance(10 * time.Minute)
		h.reap()
		if ls, _ := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 1, WaitMs: 1000}); len(ls) == 1 {
			if ls[0].Run == run {
				l = ls[0]
				break
			}
			if _, err := e.Fail(ctx, ls[0].ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: "card_declined", Message: "no"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l.Run != run || len(l.History) != 4 || l.History[3].Status != cairn.OpFailed || l.History[3].Error.Class != "card_declined" {
		t.Fatalf("after the invoked run failed: %+v", l.History)
	}

	// The parent's end cancels a run it invoked that still runs.
	invoke(l, 4, "/bill#2")
	e.Settle()
	child = h.claim("w1")
	awaitRun(t, e, run, "recording the run it invoked", func(r *cairn.Run) bool { return stepOf(r, "main").Child == child.Run })
	if _, err := e.CancelRun(ctx, run, "test"); err != nil {
		t.Fatal(err)
	}
	awaitRun(t, e, child.Run, "cancelled with its parent", func(r *cairn.Run) bool { return r.Status == cairn.RunCancelled })
}

// A result too large for the run record is stored as a payload of the
// run and recorded by reference, which the next attempt's worker reads
// through its lease; one over the payload limit is refused naming it. An
// invoked run's large output, and a child step's, become payloads of the
// parent (they were the child's); a rerun resumes the history with its
// own copies.
func TestFunctionLargeResultsByReference(t *testing.T) {
	cfg := Config{MaxOutputBytes: 256 << 10}
	h := newHarness(t, withConfig(cfg), withWorkflows("w1", fnWorkflow("fn"), single("dag", cairn.Step{ID: "only"}),
		cairn.Workflow{Name: "parent", Version: "1", Steps: []cairn.Step{{ID: "kid", Kind: cairn.KindChild, Workflow: "dag"}, {ID: "use", After: []string{"kid"}}}}))
	ctx, e := h.ctx, h.e
	big := func(c string) string { return `"` + strings.Repeat(c, DefaultPayloadInlineMax+10) + `"` }
	readRef := func(l cairn.Lease, raw json.RawMessage, want string) {
		t.Helper()
		ref, ok := asRef(raw)
		if !ok {
			t.Fatalf("recorded %d bytes inline, want a reference", len(raw))
		}
		got, err := e.LeasePayload(ctx, l.ID, ref.SHA256)
		if err != nil || string(got) != want {
			t.Fatalf("the reference's payload through the lease: %d bytes, %v", len(got), err)
		}
	}
	run := h.start("fn", "")
	l := h.claim("w1")
	huge := `"` + strings.Repeat("x", cfg.MaxOutputBytes) + `"`
	_, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(0, cairn.OpStep, "/huge#0", huge)}})
	wantField(t, err, "body.operations[0].result") // over one payload's limit
	started := cairn.Operation{ID: "/kid#0", Seq: 1, Kind: cairn.OpInvoke, Status: cairn.OpStarted}
	sp := &cairn.Suspension{Op: "/kid#0", Invoke: &cairn.Invocation{Workflow: "dag"}}
	if _, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(0, cairn.OpStep, "/a#0", big("a")), started}, Suspend: sp}); err != nil {
		t.Fatal(err)
	}
	e.Settle()
	child := h.claim("w1")
	h.complete(child.ID, big("k"))
	e.Settle()
	l = h.claim("w1")
	if l.Run != run || len(l.History) != 3 {
		t.Fatalf("after the invoked run: %+v", l)
	}
	readRef(l, l.History[0].Result, big("a"))
	readRef(l, l.History[2].Result, big("k")) // was the child's payload

	// A failed function's rerun resumes its history with its own copies.
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassFatal, Message: "stop"}}); err != nil {
		t.Fatal(err)
	}
	again, err := e.RerunRun(ctx, run, cairn.RerunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	l = h.claim("w1")
	if l.Run != again.Run.ID || len(l.History) != 3 {
		t.Fatalf("the rerun's lease: %+v", l)
	}
	readRef(l, l.History[0].Result, big("a"))
	h.complete(l.ID, `"done"`)

	// A DAG's child step: the next step's input holds the child's output.
	prun := h.start("parent", "")
	e.Settle()
	child = h.claim("w1")
	h.complete(child.ID, big("p"))
	e.Settle()
	use := h.claim("w1")
	if use.Run != prun || use.Step != "use" {
		t.Fatalf("the step after the child: %+v", use)
	}
	readRef(use, use.Steps["kid"], big("p"))
}

// A function's run continues as a new run of its version: started once
// (a complete sent again gets the same run), linked both ways, the old run
// completed with the new one's id; a DAG step and a run a parent started
// are refused; a run that ended first cancels its continuation.
func TestFunctionContinuesAsNew(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn"), single("dag", cairn.Step{ID: "only"})))
	ctx, e := h.ctx, h.e
	run := h.start("fn", `{"n":1}`)
	l := h.claim("w1")
	can := cairn.CompleteRequest{ContinueAsNew: &cairn.ContinueAsNew{Input: json.RawMessage(`{"n":2}`)}}
	for range 2 { // the second is a retry after a lost answer
		if _, err := e.Complete(ctx, l.ID, can); err != nil {
			if reason, _ := IsRejection(err); reason != cairn.ReasonAlreadyApplied {
				t.Fatal(err)
			}
		}
	}
	old := h.run(run)
	if old.Status != cairn.RunCompleted || old.ContinuedAs == "" || string(old.Output) != `{"continued_as":"`+old.ContinuedAs+`"}` {
		t.Fatalf("the old run: %s %s continued as %q", old.Status, old.Output, old.ContinuedAs)
	}
	next := h.run(old.ContinuedAs)
	if next.ContinuedFrom != run || string(next.Input) != `{"n":2}` || next.Status != cairn.RunRunning {
		t.Fatalf("the new run: %+v", next)
	}
	l = h.claim("w1")
	if l.Run != next.ID || len(l.History) != 0 {
		t.Fatalf("the new run's lease: %+v", l)
	}
	_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), ContinueAsNew: can.ContinueAsNew})
	wantField(t, err, "body.output")

	// A run that ended first: its continuation is cancelled.
	if _, err := e.CancelRun(ctx, next.ID, "test"); err != nil {
		t.Fatal(err)
	}
	_, err = e.Complete(ctx, l.ID, can)
	wantReason(t, err, cairn.ReasonRunTerminal)
	third, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "fn", IdempotencyKey: "continue:" + next.ID})
	if err != nil || !third.Existed || third.Run.Status != cairn.RunCancelled {
		t.Fatalf("the continuation of a run that ended first: %+v %v", third, err)
	}

	dag := h.start("dag", "")
	l = h.claim("w1")
	if l.Run != dag {
		t.Fatalf("claimed %+v", l)
	}
	_, err = e.Complete(ctx, l.ID, can)
	wantField(t, err, "body.continue_as_new")
}

// What each operation of a function costs in store requests, on the
// engine's side: a checkpoint of steps is one record swap; a sleep is the
// swap that suspends and, at its end, one claim (a lease create); an
// event is one swap; the end is the complete's swap. Logged for the
// docs, and bounded so that a request added to a checkpoint fails here.
func TestFunctionRequestsPerOperation(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w1", fnWorkflow("fn")))
	ctx, e, counts := h.ctx, h.e, h.counts
	warmUp(t, e, "w1")
	run := h.start("fn", "")
	l := h.claim("w1")
	e.Settle()
	measure := func(what string, max counting.Snapshot, do func()) {
		t.Helper()
		counts.Reset()
		do()
		e.Settle()
		got := counts.Snapshot()
		t.Logf("%s: %s", what, got)
		if got.Reads() > max.Reads() || got.PutClass() > max.PutClass() || got.Delete > 0 {
			t.Errorf("%s cost %s, over %d reads and %d PUT-class", what, got, max.Reads(), max.PutClass())
		}
	}
	measure("a checkpoint of 10 steps", counting.Snapshot{Swap: 1}, func() {
		var ops []cairn.Operation
		for i := range 10 {
			ops = append(ops, op(i, cairn.OpStep, fmt.Sprintf("/s#%d", i), "1"))
		}
		if _, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: ops}); err != nil {
			t.Fatal(err)
		}
	})
	until := h.clk.Now().Add(time.Minute)
	measure("a sleep's suspension", counting.Snapshot{Swap: 1, Put: 1}, func() { // the swap; a timer for its end
		sleep := cairn.Operation{ID: "/nap#0", Seq: 10, Kind: cairn.OpSleep, Status: cairn.OpCompleted, WakeAt: &until}
		if _, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{sleep}, Suspend: &cairn.Suspension{Until: &until}}); err != nil {
			t.Fatal(err)
		}
	})
	h.clk.Advance(time.Minute)
	// A claim's own cost, as any task's: the run record, the lease, and
	// the worker's sighting a minute on.
	measure("the resume's claim", counting.Snapshot{Get: 2, Create: 1, Swap: 1}, func() { l = h.claim("w1") })
	measure("a wait's suspension, then its event", counting.Snapshot{Get: 1, Swap: 2, Put: 1}, func() { // the event's timer
		waitFor(t, h, l, 11, "/ok#0", "ok", nil)
		if _, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "ok"}); err != nil {
			t.Fatal(err)
		}
	})
}

// A rerun of a failed function goes on from its last checkpoint before
// the failure: the new run's lease carries what succeeded.
func TestRerunOfAFunctionResumesFromItsHistory(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn")))
	ctx, e := h.ctx, h.e
	run := h.start("fn", "")
	l := h.claim("w1")
	failed := cairn.Operation{ID: "/b#0", Seq: 1, Kind: cairn.OpStep, Status: cairn.OpFailed, Error: &cairn.ErrorInfo{Class: "boom", Message: "b failed"}}
	if _, err := e.Checkpoint(ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{op(0, cairn.OpStep, "/a#0", `"a"`), failed}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassFatal, Message: "b failed"}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.RerunRun(ctx, run, cairn.RerunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	l = h.claim("w1")
	if l.Run != res.Run.ID || len(l.History) != 1 || l.History[0].ID != "/a#0" || string(l.History[0].Result) != `"a"` {
		t.Fatalf("the rerun's lease: run %s (rerun %s), history %+v", l.Run, res.Run.ID, l.History)
	}
	// from_step names the function: it starts over.
	h.complete(l.ID, `"ok"`)
	res, err = e.RerunRun(ctx, run, cairn.RerunRequest{FromStep: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if l = h.claim("w1"); l.Run != res.Run.ID || len(l.History) != 0 {
		t.Fatalf("a rerun from the function's step: history %+v", l.History)
	}
}

// Flow control applies to functions as to tasks: a concurrency limit
// bounds the drivers holding leases, and a suspended function holds no
// slot (its attempt ended), so another run's driver takes it.
func TestFunctionConcurrencyLimit(t *testing.T) {
	wf := single("limited", cairn.Step{ID: "main", Kind: cairn.KindFunction, Concurrency: &cairn.ConcurrencyLimit{Key: "${input.tenant}", Limit: 1}})
	h := newHarness(t, withWorkflows("w1", wf))
	ctx, e := h.ctx, h.e
	h.start("limited", `{"tenant":"t1"}`)
	h.start("limited", `{"tenant":"t1"}`)
	first := h.claim("w1")
	if ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 2}); err != nil || len(ls) != 0 {
		t.Fatalf("a second driver of tenant t1 while the first holds the slot: %d leases, %v", len(ls), err)
	}
	until := h.clk.Now().Add(time.Hour)
	sleep := cairn.Operation{ID: "/nap#0", Seq: 0, Kind: cairn.OpSleep, Status: cairn.OpCompleted, WakeAt: &until}
	if _, err := e.Checkpoint(ctx, first.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{sleep}, Suspend: &cairn.Suspension{Until: &until}}); err != nil {
		t.Fatal(err)
	}
	if second := h.claim("w1"); second.Run == first.Run {
		t.Fatalf("claimed the suspended run %s again", second.Run)
	}
}

// A suspension waits only for an operation its history holds as started,
// of the kind it says.
func TestSuspensionNamesAStartedOperation(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn")))
	h.start("fn", "")
	l := h.claim("w1")
	step := op(0, cairn.OpStep, "/a#0", "1")
	for _, sp := range []*cairn.Suspension{{Op: "/nope#0", Event: "go"}, {Op: "/a#0", Event: "go"}, {Op: "/a#0", Invoke: &cairn.Invocation{Workflow: "fn"}}} {
		_, err := h.e.Checkpoint(h.ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{step}, Suspend: sp})
		wantField(t, err, "body.suspend.op")
	}
}
