package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
)

// approval waits, after its task a, for update "approve", whose answer
// is the output of task b, after the wait.
var approval = cairn.Workflow{Name: "approval", Version: "1", Steps: []cairn.Step{
	{ID: "a"},
	{ID: "w", Kind: cairn.KindWait, Event: "approve", Answer: "b", After: []string{"a"}},
	{ID: "b", After: []string{"w"}, Input: json.RawMessage(`{"by": "${steps.w.output.by}"}`)},
}}

// update sends update req to run, which must accept it.
func (h *harness) update(e *Engine, run string, req cairn.UpdateRequest) *cairn.Update {
	h.t.Helper()
	u, err := e.SendUpdate(h.ctx, run, req)
	if err != nil {
		h.t.Fatalf("update %+v: %v", req, err)
	}
	return u
}

// heldUpdate holds a request for update id of run (AwaitUpdate, up to
// 20 s) and delivers its answer.
func (h *harness) heldUpdate(run, id string) <-chan *cairn.Update {
	held := make(chan *cairn.Update, 1)
	go func() {
		u, err := h.e.AwaitUpdate(h.ctx, run, id, 20*time.Second)
		if err != nil {
			h.t.Error(err)
		}
		held <- u
	}()
	return held
}

// wantUpdate checks an update's status and answer.
func wantUpdate(t *testing.T, u *cairn.Update, status cairn.UpdateStatus, answer string) {
	t.Helper()
	if u.Status != status || answer != "" && string(u.Answer) != answer {
		t.Fatalf("update %s: %s with %s (error %+v), want %s with %s", u.ID, u.Status, u.Answer, u.Error, status, answer)
	}
}

// TestUpdateAnswered: an update is taken by the wait for its name and
// answered by the output of the step the wait names; a request held
// for the answer gets it in the same call, and a poll gets it after.
func TestUpdateAnswered(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := h.start("approval", `{}`)
		h.complete(h.claim("w").ID, `1`)
		u := h.update(h.e, run, cairn.UpdateRequest{ID: "u1", Name: "approve", Input: json.RawMessage(`{"by": "ann"}`)})
		if wantUpdate(t, u, cairn.UpdateAccepted, ""); u.Step != "w" || u.Run != run {
			t.Fatalf("accepted update %+v, want taken by w", u)
		}
		l := h.claim("w")
		if string(l.Input) != `{"by":"ann"}` {
			t.Fatalf("b's input %s", l.Input)
		}
		held := h.heldUpdate(run, "u1")
		h.complete(l.ID, `{"ok": true}`)
		select {
		case u = <-held:
			wantUpdate(t, u, cairn.UpdateAnswered, `{"ok":true}`)
		case <-time.After(30 * time.Second):
			t.Fatal("a request held for the answer got none 30s after step b completed")
		}
		u, err := h.e.AwaitUpdate(h.ctx, run, "u1", 0)
		if err != nil {
			t.Fatal(err)
		}
		wantUpdate(t, u, cairn.UpdateAnswered, `{"ok":true}`)
		if _, err := h.e.AwaitUpdate(h.ctx, run, "nope", 0); !isNotFoundAPI(err) {
			t.Fatalf("an unknown update: %v, want not found", err)
		}
	}, withWorkflows("w", approval))
}

// TestUpdateWithoutAnswerStep: a wait with no answer answers with its
// own output (the update's input), in the request that sends it; an
// update sent before the wait starts is kept and taken when it does.
func TestUpdateWithoutAnswerStep(t *testing.T) {
	h := newHarness(t, withWorkflows("w", twoWaits))
	run := h.start("two", `{}`)
	early := h.update(h.e, run, cairn.UpdateRequest{ID: "early", Name: "go", Input: json.RawMessage(`1`)})
	wantUpdate(t, early, cairn.UpdateAccepted, "")
	h.complete(h.claim("w").ID, `1`)
	u, err := h.e.AwaitUpdate(h.ctx, run, "early", 0)
	if err != nil || u.Step != "w1" {
		t.Fatalf("the kept update: %+v %v, want taken by w1", u, err)
	}
	wantUpdate(t, u, cairn.UpdateAnswered, `1`)
	wantUpdate(t, h.update(h.e, run, cairn.UpdateRequest{Name: "go", Input: json.RawMessage(`2`), WaitMs: 1000}), cairn.UpdateAnswered, `2`)
}

// TestUpdateRefused: what cannot be delivered is answered to the caller
// (a 404, 409 or 422 naming the field) and recorded nowhere.
func TestUpdateRefused(t *testing.T) {
	h := newHarness(t, withWorkflows("w", approval, twoWaits))
	run := h.start("approval", `{}`)
	ended := h.start("two", `{}`)
	if _, err := h.e.CancelRun(h.ctx, ended, "done"); err != nil {
		t.Fatal(err)
	}
	before, err := h.e.readRun(h.ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", h.e.cfg.MaxOutputBytes) + `"`)
	for _, c := range []struct {
		name, run string
		req       cairn.UpdateRequest
		field     string // a validation error's, else a conflict or not found
	}{
		{"no wait takes it", run, cairn.UpdateRequest{Name: "aprove"}, "name"},
		{"no name", run, cairn.UpdateRequest{}, "name"},
		{"bad id", run, cairn.UpdateRequest{ID: "a\nb", Name: "approve"}, "id"},
		{"input too large", run, cairn.UpdateRequest{Name: "approve", Input: big}, "input"},
		{"negative wait", run, cairn.UpdateRequest{Name: "approve", WaitMs: -1}, "wait_ms"},
		{"ended run", ended, cairn.UpdateRequest{Name: "go"}, "conflict"},
		{"unknown run", "7YBQ8BJD03WTTD0XEM50YZFHTH", cairn.UpdateRequest{Name: "go"}, "not found"},
	} {
		_, err := h.e.SendUpdate(h.ctx, c.run, c.req)
		var ve cairn.ValidationError
		var ce *ConflictError
		switch {
		case c.field == "conflict" && errors.As(err, &ce), c.field == "not found" && isNotFoundAPI(err):
		case errors.As(err, &ve) && len(ve) == 1 && ve[0].Field == c.field:
		default:
			t.Errorf("%s: %v, want %s refused", c.name, err, c.field)
		}
	}
	if after, err := h.e.readRun(h.ctx, run); err != nil || after.Rev != before.Rev || len(after.Journal) != len(before.Journal) {
		t.Fatalf("a refused update changed the run: rev %d → %d", before.Rev, after.Rev)
	}
	// Once its one wait took an update, no wait is left for a second.
	h.complete(h.claim("w").ID, `1`)
	h.update(h.e, run, cairn.UpdateRequest{Name: "approve"})
	var ve cairn.ValidationError
	if _, err := h.e.SendUpdate(h.ctx, run, cairn.UpdateRequest{Name: "approve"}); !errors.As(err, &ve) || ve[0].Field != "name" {
		t.Fatalf("an update no wait is left for: %v, want refused (name)", err)
	}
}

// TestUpdateRetried: an update sent again with its id is the same
// update, delivered once, even after the run ended; with another input
// it is a conflict.
func TestUpdateRetried(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := h.start("two", `{}`)
		h.complete(h.claim("w").ID, `1`)
		req := cairn.UpdateRequest{ID: "once", Name: "go", Input: json.RawMessage(`{"n": 1}`)}
		first := h.update(h.e, run, req)
		req.Input = json.RawMessage(`{ "n" : 1 }`) // the same input, spaced otherwise
		again := h.update(h.peer(), run, req)
		if first.Step != "w1" || again.Step != "w1" || again.AcceptedAt != first.AcceptedAt {
			t.Fatalf("sent again: %+v, first %+v", again, first)
		}
		wantWaits(t, h.run(run), `{"n":1}`, "")
		req.Input = json.RawMessage(`{"n": 2}`)
		var ce *ConflictError
		if _, err := h.e.SendUpdate(h.ctx, run, req); !errors.As(err, &ce) {
			t.Fatalf("the same id with another input: %v, want a conflict", err)
		}
		if _, err := h.e.CancelRun(h.ctx, run, "done"); err != nil {
			t.Fatal(err)
		}
		req.Input = json.RawMessage(`{"n": 1}`)
		wantUpdate(t, h.update(h.e, run, req), cairn.UpdateAnswered, `{"n":1}`)
	}, withWorkflows("w", twoWaits))
}

// TestUpdatesRace: two updates sent at once from two instances are each
// taken by one wait, and answered each with its own input; the same
// update sent at once from both is delivered once.
func TestUpdatesRace(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		es := h.instances(2)
		race := func(run string, reqs ...cairn.UpdateRequest) []*cairn.Update {
			out := make([]*cairn.Update, len(reqs))
			var wg sync.WaitGroup
			for i := range reqs {
				wg.Go(func() { out[i] = h.update(es[i], run, reqs[i]) })
			}
			wg.Wait()
			return out
		}
		run := h.start("two", `{}`)
		h.complete(h.claim("w").ID, `1`)
		us := race(run, cairn.UpdateRequest{ID: "x", Name: "go", Input: json.RawMessage(`"x"`)}, cairn.UpdateRequest{ID: "y", Name: "go", Input: json.RawMessage(`"y"`)})
		if us[0].Step == us[1].Step || us[0].Step == "" || us[1].Step == "" {
			t.Fatalf("two updates taken by %q and %q, want one wait each", us[0].Step, us[1].Step)
		}
		wantUpdate(t, us[0], cairn.UpdateAnswered, `"x"`)
		wantUpdate(t, us[1], cairn.UpdateAnswered, `"y"`)

		run = h.start("two", `{}`)
		h.complete(h.claim("w").ID, `1`)
		same := cairn.UpdateRequest{ID: "z", Name: "go", Input: json.RawMessage(`"z"`)}
		us = race(run, same, same)
		if us[0].Step != "w1" || us[1].Step != "w1" {
			t.Fatalf("the same update sent twice at once: taken by %q and %q, want w1 once", us[0].Step, us[1].Step)
		}
		wantWaits(t, h.run(run), `"z"`, "")
	}, withWorkflows("w", twoWaits))
}

// TestUpdateFailed: an update whose answering step fails, or whose run
// ends before a wait takes it, fails with the reason.
func TestUpdateFailed(t *testing.T) {
	h := newHarness(t, withWorkflows("w", approval))
	run := h.start("approval", `{}`)
	h.complete(h.claim("w").ID, `1`)
	h.update(h.e, run, cairn.UpdateRequest{ID: "u", Name: "approve", Input: json.RawMessage(`{"by": "ann"}`)})
	l := h.claim("w")
	if _, err := h.e.Fail(h.ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassFatal, Message: "no"}}); err != nil {
		t.Fatal(err)
	}
	u, err := h.e.AwaitUpdate(h.ctx, run, "u", 0)
	if err != nil || u.Status != cairn.UpdateFailed || u.Error == nil || u.Error.Message != "no" {
		t.Fatalf("answer step failed: %+v %v", u, err)
	}
	run = h.start("approval", `{}`)
	h.update(h.e, run, cairn.UpdateRequest{ID: "kept", Name: "approve"})
	if _, err := h.e.CancelRun(h.ctx, run, "stop"); err != nil {
		t.Fatal(err)
	}
	if u, err = h.e.AwaitUpdate(h.ctx, run, "kept", 0); err != nil || u.Status != cairn.UpdateFailed || !strings.Contains(u.Error.Message, "run ended") {
		t.Fatalf("run ended first: %+v %v", u, err)
	}
}

// TestFunctionReplies: a function's wait takes an update like an event,
// its operation carrying the update's id, and the function's reply
// operation for that id answers it.
func TestFunctionReplies(t *testing.T) {
	h := newHarness(t, withWorkflows("w1", fnWorkflow("fn")))
	run := h.start("fn", "")
	l := h.claim("w1")
	waitFor(t, h, l, 0, "/ask#0", "ask", nil)
	wantUpdate(t, h.update(h.e, run, cairn.UpdateRequest{ID: "q", Name: "ask", Input: json.RawMessage(`"why"`)}), cairn.UpdateAccepted, "")
	l = h.claim("w1")
	if len(l.History) != 2 || l.History[1].Update != "q" || string(l.History[1].Result) != `"why"` {
		t.Fatalf("the wait's outcome: %+v", l.History)
	}
	reply := cairn.Operation{ID: "/reply#0", Seq: 2, Kind: cairn.OpReply, Status: cairn.OpCompleted, Update: "q", Result: json.RawMessage(`"because"`)}
	if _, err := h.e.Checkpoint(h.ctx, l.ID, cairn.CheckpointRequest{Operations: []cairn.Operation{reply}}); err != nil {
		t.Fatal(err)
	}
	u, err := h.e.AwaitUpdate(h.ctx, run, "q", 0)
	if err != nil {
		t.Fatal(err)
	}
	wantUpdate(t, u, cairn.UpdateAnswered, `"because"`)
}

// TestUpdateRequests: what an update costs the store, caches warm: a
// read of the run and its write; answered by the wait itself (no answer
// step), nothing more; held for an answer that has not come, nothing
// more either (the hold starts from the copy the update's own write left,
// and a commit on this instance wakes it with no read). Sent again, two reads (a no-op is decided on a fresh
// record), no write; a poll, one read.
func TestUpdateRequests(t *testing.T) {
	h := newHarness(t, counted(), withWorkflows("w", twoWaits, approval))
	run, held := h.start("two", `{}`), h.start("approval", `{}`)
	h.complete(h.claim("w").ID, `1`)
	h.complete(h.claim("w").ID, `1`)
	warmUp(t, h.e, "w")
	send := func(run, name, id string, wait int64) func() {
		return func() { h.update(h.e, run, cairn.UpdateRequest{ID: id, Name: name, WaitMs: wait}) }
	}
	for _, c := range []struct {
		what string
		send func()
		want counting.Snapshot
	}{
		{"an update answered at once", send(run, "go", "a", 1000), counting.Snapshot{Get: 1, Swap: 1}},
		{"an update held 50ms for an answer to come", send(held, "approve", "b", 50), counting.Snapshot{Get: 1, Swap: 1}},
		{"the same update sent again", send(run, "go", "a", 1000), counting.Snapshot{Get: 2}},
		{"a poll", func() {
			if _, err := h.e.AwaitUpdate(h.ctx, run, "a", 0); err != nil {
				t.Fatal(err)
			}
		}, counting.Snapshot{Get: 1}},
	} {
		h.e.Settle()
		h.counts.Reset()
		c.send()
		h.e.Settle()
		if got := h.counts.Snapshot(); got != c.want {
			t.Errorf("%s: %s, want %s", c.what, got, c.want)
		}
	}
}
