package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/payload"
)

// bigJSON is a JSON object of about n bytes whose field n is i.
func bigJSON(i, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat(string(rune('a'+i%26)), n)))
}

func payloadKeys(t testing.TB, e *Engine, run string) []string {
	t.Helper()
	return allKeys(t, e.store, e.keys.PayloadsOf(run))
}

// fanOut is a workflow of width parallel steps and a join whose template
// reads field n of every one of their outputs.
func payloadFanOut(name string, width int) cairn.Workflow {
	w := cairn.Workflow{Name: name, Version: "1"}
	var after, exprs []string
	for i := range width {
		id := fmt.Sprintf("p%03d", i)
		w.Steps = append(w.Steps, cairn.Step{ID: id})
		after = append(after, id)
		exprs = append(exprs, fmt.Sprintf(`"${steps.%s.output.n}"`, id))
	}
	w.Steps = append(w.Steps, cairn.Step{ID: "join", After: after, Input: json.RawMessage(`{"ns":[` + strings.Join(exprs, ",") + `]}`)})
	return w
}

// TestPayloadFanOut200: a 200-way fan-out of 100 KB outputs completes on
// every store (20 MB of outputs: the run record alone could hold 8 MiB),
// the join reads every output through its template, the record stays
// small, and GET /runs/{run} resolves outputs up to its budget and
// answers the rest as references that resolve to the outputs.
func TestPayloadFanOut200(t *testing.T) {
	const width, size = 200, 100 << 10
	for name, open := range stores(t) {
		if name == "mem" {
			continue // the file store and MinIO are the ones asked for
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newTestEngine(t, open(t), Config{})
			register(t, e, "w", payloadFanOut("fan", width))
			run := mustStart(t, e, "fan", `{}`)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			var mu sync.Mutex
			done := 0
			var join *cairn.Lease
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						mu.Lock()
						if done > width {
							mu.Unlock()
							return
						}
						mu.Unlock()
						ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 5, WaitMs: 200})
						if err != nil {
							errs <- err
							return
						}
						for _, l := range ls {
							if l.Step == "join" {
								mu.Lock()
								join = &l
								done++ // the join is ready only when every other step is done
								mu.Unlock()
								continue
							}
							var i int
							fmt.Sscanf(l.Step, "p%03d", &i)
							// As a worker does: a 503 (the commit outlived
							// its bound on a starved store) is retried; a
							// retry of a complete that did land is
							// already_applied, a success.
							for try := 1; ; try++ {
								_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: bigJSON(i, size)})
								var u *UnavailableError
								if errors.As(err, &u) && try < 5 {
									t.Logf("complete %s: %v; again", l.Step, err)
									continue
								}
								if reason, ok := IsRejection(err); ok && reason == cairn.ReasonAlreadyApplied {
									err = nil
								}
								if err != nil {
									errs <- fmt.Errorf("complete %s: %w", l.Step, err)
									return
								}
								break
							}
							mu.Lock()
							done++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if join == nil {
				t.Fatal("join not claimed")
			}
			l := *join
			if l.Step != "join" {
				t.Fatalf("claimed %s, want join", l.Step)
			}
			var in struct{ Ns []int }
			if err := json.Unmarshal(l.Input, &in); err != nil || len(in.Ns) != width {
				t.Fatalf("join input %.200s: %v", l.Input, err)
			}
			for i, n := range in.Ns {
				if n != i {
					t.Fatalf("join input ns[%d] = %d", i, n)
				}
			}
			if len(l.Steps) != width || !IsPayloadRef(l.Steps["p007"]) {
				t.Fatalf("the lease's steps should carry references: %d, %.100s", len(l.Steps), l.Steps["p007"])
			}
			got, err := e.LeasePayload(ctx, l.ID, mustRef(t, l.Steps["p007"]).SHA256)
			if err != nil || string(got) != string(bigJSON(7, size)) {
				t.Fatalf("lease payload: %v", err)
			}
			if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`"joined"`)}); err != nil {
				t.Fatal(err)
			}
			o, err := e.store.Get(ctx, e.keys.Run(run))
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Data) > 1<<20 {
				t.Fatalf("run record is %d bytes: outputs were not stored by reference", len(o.Data))
			}
			if n := len(payloadKeys(t, e, run)); n != width {
				t.Fatalf("%d payload objects, want %d", n, width)
			}
			r := getRun(t, e, run)
			if r.Status != cairn.RunCompleted {
				t.Fatalf("run %s", r.Status)
			}
			resolved, refs := 0, 0
			for _, s := range r.Steps {
				if s.ID == "join" {
					continue
				}
				var i int
				fmt.Sscanf(s.ID, "p%03d", &i)
				if ref, ok := cairn.AsPayloadRef(s.Output); ok {
					refs++
					b, err := e.Payload(ctx, run, ref.SHA256)
					if err != nil || string(b) != string(bigJSON(i, size)) {
						t.Fatalf("payload of %s: %v", s.ID, err)
					}
					continue
				}
				resolved++
				if string(s.Output) != string(bigJSON(i, size)) {
					t.Fatalf("resolved output of %s is wrong", s.ID)
				}
			}
			if max := DefaultViewResolveBytes / (size + 20); resolved < max-1 || resolved > max || refs != width-resolved {
				t.Fatalf("view resolved %d outputs and left %d references; want about %d resolved", resolved, refs, max)
			}
			t.Logf("%s: record %d bytes; view resolved %d outputs, %d by reference", name, len(o.Data), resolved, refs)
		})
	}
}

func mustRef(t testing.TB, raw json.RawMessage) cairn.PayloadRef {
	t.Helper()
	r, ok := cairn.AsPayloadRef(raw)
	if !ok {
		t.Fatalf("not a reference: %.100s", raw)
	}
	return r
}

// runTwoSteps runs a two-step chain whose first step outputs out and
// whose second reads field n of it through its template, and returns the
// requests of each phase.
func runTwoSteps(t testing.TB, cfg Config, out json.RawMessage) (claim1, complete1, claim2, complete2 counting.Snapshot) {
	t.Helper()
	h := newHarness(t, counted(), withConfig(cfg), wallClock())
	ctx, e, counts := h.ctx, h.e, h.counts
	wf := cairn.Workflow{Name: "two", Version: "1", Steps: []cairn.Step{
		{ID: "a"},
		{ID: "b", After: []string{"a"}, Input: json.RawMessage(`{"n":"${steps.a.output.n}"}`)},
	}}
	register(t, e, "w", wf)
	mustStart(t, e, "two", `{}`)
	phase := func(f func()) counting.Snapshot {
		e.Settle()
		before := counts.Snapshot()
		f()
		e.Settle()
		return counts.Snapshot().Sub(before)
	}
	var l cairn.Lease
	claim1 = phase(func() { l = claimOne(t, e, "w") })
	complete1 = phase(func() {
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: out}); err != nil {
			t.Fatal(err)
		}
	})
	claim2 = phase(func() { l = claimOne(t, e, "w") })
	if string(l.Input) != `{"n":7}` {
		t.Fatalf("b's input %s", l.Input)
	}
	complete2 = phase(func() {
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
	})
	return
}

// TestPayloadRequestsPerStep: a step whose output stays inline costs
// exactly the requests it cost before payloads by reference existed
// (PayloadInlineMax < 0 is that engine); a 100 KB output costs one create
// at its complete and, read by a template on another instance (no
// cache), one GET at the claim that renders it.
func TestPayloadRequestsPerStep(t *testing.T) {
	small := json.RawMessage(`{"n":7,"s":"` + strings.Repeat("x", 1000) + `"}`)
	off := Config{PayloadInlineMax: -1, PayloadCacheBytes: -1}
	on := Config{PayloadCacheBytes: -1}
	o1, o2, o3, o4 := runTwoSteps(t, off, small)
	n1, n2, n3, n4 := runTwoSteps(t, on, small)
	if o1 != n1 || o2 != n2 || o3 != n3 || o4 != n4 {
		t.Fatalf("a small output costs other requests with payloads by reference:\n inline only: %v | %v | %v | %v\n by reference: %v | %v | %v | %v", o1, o2, o3, o4, n1, n2, n3, n4)
	}
	big := bigJSON(7, 100<<10)
	b1, b2, b3, b4 := runTwoSteps(t, on, big)
	if d := b2.Sub(n2); d.Create != 1 || d.Total() != 1 {
		t.Fatalf("a 100 KB output's complete: %v more than a small one's, want one create", d)
	}
	if d := b3.Sub(n3); d.Get != 1 || d.Total() != 1 {
		t.Fatalf("rendering a 100 KB output by reference: %v more than inline, want one get", d)
	}
	if b1 != n1 || b4 != n4 {
		t.Fatalf("other phases changed: %v %v vs %v %v", b1, b4, n1, n4)
	}
	// With the instance's cache (the default), the claim that follows a
	// complete on the same instance reads nothing more.
	_, _, c3, _ := runTwoSteps(t, Config{}, big)
	if c3 != n3 {
		t.Fatalf("cached: claim %v, want %v", c3, n3)
	}
	t.Logf("small step: claim %v; complete %v; dependent claim %v", n1, n2, n3)
	t.Logf("100 KB output: complete %v; dependent claim %v (uncached), %v (cached)", b2, b3, c3)
}

// TestPayloadLimit: a payload at the per-payload limit is accepted, one
// byte more is refused naming the field, for outputs, state values, start
// inputs and event payloads.
func TestPayloadLimit(t *testing.T) {
	ctx := context.Background()
	const limit = 512 << 10
	e := newTestEngine(t, nil, Config{MaxOutputBytes: limit})
	wf := cairn.Workflow{Name: "lim", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "w", Kind: cairn.KindWait, Event: "go", After: []string{"a"}}}}
	register(t, e, "w", wf)
	at := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("y", n-2) + `"`) }
	field := func(err error) string {
		var v cairn.ValidationError
		if errors.As(err, &v) && len(v) > 0 {
			return v[0].Field
		}
		return fmt.Sprintf("not a validation error: %v", err)
	}
	if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lim", Input: at(limit + 1)}); field(err) != "input" {
		t.Fatalf("start over the limit: %v", err)
	}
	if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lim", State: map[string]json.RawMessage{"k": at(limit + 1)}}); field(err) != "state.k" {
		t.Fatalf("state over the limit: %v", err)
	}
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lim", Input: at(limit)})
	if err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, e, "w")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: at(limit + 1)}); field(err) != "output" {
		t.Fatalf("output over the limit: %v", err)
	}
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: at(limit)}); err != nil {
		t.Fatalf("output at the limit: %v", err)
	}
	if _, err := e.SendEvent(ctx, res.Run.ID, cairn.EventRequest{Name: "go", Payload: at(limit + 1)}); field(err) != "payload" {
		t.Fatalf("event over the limit: %v", err)
	}
	if _, err := e.SendEvent(ctx, res.Run.ID, cairn.EventRequest{Name: "go", Payload: at(limit)}); err != nil {
		t.Fatal(err)
	}
	r := getRun(t, e, res.Run.ID)
	if r.Status != cairn.RunCompleted || string(r.Input) != string(at(limit)) || string(stepOf(r, "a").Output) != string(at(limit)) {
		t.Fatalf("run %s", r.Status)
	}
}

// TestPayloadStartInputAndEvent: a large start input and a large event
// payload go by reference; the first step's lease (no template) carries
// the input's reference, which its worker reads back; templates see both
// values; the journal holds the event's reference, not its bytes.
func TestPayloadStartInputAndEvent(t *testing.T) {
	h := newHarness(t, wallClock())
	ctx, e := h.ctx, h.e
	wf := cairn.Workflow{Name: "ev", Version: "1", Steps: []cairn.Step{
		{ID: "a"},
		{ID: "w", Kind: cairn.KindWait, Event: "go", After: []string{"a"}},
		{ID: "b", After: []string{"w"}, Input: json.RawMessage(`{"in":"${input.n}","ev":"${steps.w.output.n}"}`)},
	}}
	register(t, e, "w", wf)
	input, payload := bigJSON(3, 200<<10), bigJSON(4, 300<<10)
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "ev", Input: input})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Run.ID
	l := claimOne(t, e, "w")
	ref := mustRef(t, l.Input)
	if b, err := e.LeasePayload(ctx, l.ID, ref.SHA256); err != nil || string(b) != string(input) {
		t.Fatalf("input by reference: %v", err)
	}
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendEvent(ctx, run, cairn.EventRequest{Name: "go", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	l = claimOne(t, e, "w")
	if string(l.Input) != `{"ev":4,"in":3}` {
		t.Fatalf("b's input %s", l.Input)
	}
	j, err := e.Journal(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range j {
		if len(x.Data) > 1000 {
			t.Fatalf("journal %s holds %d bytes of data", x.Type, len(x.Data))
		}
	}
	r := getRun(t, e, run)
	if string(r.Input) != string(input) || string(stepOf(r, "w").Output) != string(payload) {
		t.Fatal("the view does not resolve the input and the event's payload")
	}
	if n := len(payloadKeys(t, e, run)); n != 2 {
		t.Fatalf("%d payloads, want 2", n)
	}
}

// TestPayloadWaitedViewResolves: GET /runs/{run} with wait_ms answers a
// run that ended while held as it answers without: its input and
// outputs stored by reference resolved (up to the view's budget), not
// references a plain HTTP client would have to fetch one by one.
func TestPayloadWaitedViewResolves(t *testing.T) {
	h := newHarness(t, wallClock())
	ctx, e := h.ctx, h.e
	register(t, e, "w", single("one", cairn.Step{}))
	input, output := bigJSON(1, 100<<10), bigJSON(2, 150<<10)
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "one", Input: input})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Run.ID
	l := claimOne(t, e, "w")
	waited := make(chan *cairn.Run, 1)
	go func() {
		r, _, err := e.AwaitRun(ctx, run, 10*time.Second, "k", "getRun")
		if err != nil {
			t.Error(err)
		}
		waited <- r
	}()
	awaitWatched(t, e, run)
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: output}); err != nil {
		t.Fatal(err)
	}
	for what, r := range map[string]*cairn.Run{"held": <-waited, "plain": getRun(t, e, run)} {
		if r == nil || r.Status != cairn.RunCompleted {
			t.Fatalf("%s view: %+v", what, r)
		}
		if string(r.Input) != string(input) || string(r.Output) != string(output) || string(stepOf(r, "only").Output) != string(output) {
			t.Errorf("the %s view answers references, not the values: input %.60s, output %.60s", what, r.Input, r.Output)
		}
	}
}

// TestPayloadUpdateAnswerResolves: an update answered by a step whose
// output is stored by reference answers the value, held or polled, as a
// run's view does, not a reference a plain HTTP client must fetch.
func TestPayloadUpdateAnswerResolves(t *testing.T) {
	h := newHarness(t, wallClock())
	register(t, h.e, "w", approval)
	run := h.start("approval", `{}`)
	h.complete(h.claim("w").ID, `1`)
	h.update(h.e, run, cairn.UpdateRequest{ID: "u1", Name: "approve", Input: json.RawMessage(`{"by":"ann"}`)})
	l := h.claim("w")
	held := h.heldUpdate(run, "u1")
	answer := bigJSON(5, 100<<10)
	h.complete(l.ID, string(answer))
	if st := stepOf(getRun(t, h.e, run), "b"); !IsPayloadRef(st.Output) && len(payloadKeys(t, h.e, run)) == 0 {
		t.Fatal("b's output is not stored by reference: the test does not test it")
	}
	polled, err := h.e.AwaitUpdate(h.ctx, run, "u1", 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.e.SendUpdate(h.ctx, run, cairn.UpdateRequest{ID: "u1", Name: "approve", Input: json.RawMessage(`{"by":"ann"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for what, u := range map[string]*cairn.Update{"held": <-held, "polled": polled, "sent again": again} {
		if u == nil {
			t.Fatalf("%s: no update", what)
		}
		if u.Status != cairn.UpdateAnswered || string(u.Answer) != string(answer) {
			t.Errorf("%s: update %s with %.60s, want answered with the %d-byte value", what, u.Status, u.Answer, len(answer))
		}
	}
}

// TestPayloadDedupAndDelete: the same content is one object however many
// values hold it; deleting the run deletes its payloads.
func TestPayloadDedupAndDelete(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", payloadFanOut("dd", 3)))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "dd", `{}`)
	same := bigJSON(1, 80<<10)
	for range 3 {
		l := claimOne(t, e, "w")
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: same, StatePatch: map[string]json.RawMessage{l.Step: same}}); err != nil {
			t.Fatal(err)
		}
	}
	if keys := payloadKeys(t, e, run); len(keys) != 1 {
		t.Fatalf("payloads %v, want one", keys)
	}
	l := claimOne(t, e, "w")
	if string(l.Input) != `{"ns":[1,1,1]}` {
		t.Fatalf("join input %s", l.Input)
	}
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteRun(ctx, run, false); err != nil {
		t.Fatal(err)
	}
	if keys := payloadKeys(t, e, run); len(keys) != 0 {
		t.Fatalf("payloads left after the run was deleted: %v", keys)
	}
	if _, err := e.Payload(ctx, run, mustRef(t, mustJSONRef(t, e, same)).SHA256); !isNotFoundAPI(err) {
		t.Fatalf("payload of a deleted run: %v", err)
	}
}

func mustJSONRef(t testing.TB, e *Engine, raw json.RawMessage) json.RawMessage {
	t.Helper()
	ref, err := payload.New(mem.New(), e.keys, e.cfg.PayloadInlineMax, 0).Externalize(context.Background(), "x", raw)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestPayloadLookalike: a client value that is exactly a reference's
// form is stored by reference itself, so it comes back as sent and is
// never taken for a reference; other values are untouched.
func TestPayloadLookalike(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("look", cairn.Step{Input: json.RawMessage(`{"x":"${input}"}`)})))
	ctx, e := h.ctx, h.e
	fake := cairn.PayloadRef{SHA256: strings.Repeat("ab", 32), Bytes: 5}.JSON()
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "look", Input: fake})
	if err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, e, "w")
	if want := `{"x":{"$cairn_payload":{"bytes":5,"sha256":"` + strings.Repeat("ab", 32) + `"}}}`; string(l.Input) != want {
		t.Fatalf("input %s, want %s", l.Input, want)
	}
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: fake}); err != nil {
		t.Fatal(err)
	}
	r := getRun(t, e, res.Run.ID)
	if string(r.Input) != string(fake) || string(stepOf(r, "only").Output) != string(fake) {
		t.Fatalf("lookalike values changed: %s / %s", r.Input, stepOf(r, "only").Output)
	}
	for _, s := range []string{`{"$cairn_payload":1}`, ` {"\u0024cairn_payload":{"x":1},"y":2}`, `{"$cairn_payload":{"sha256":"` + strings.Repeat("ab", 32) + `","bytes":5}}`} {
		if !e.payloads.ByReference(json.RawMessage(s)) {
			t.Fatalf("%s would stay inline", s)
		}
	}
	for _, s := range []string{`{"a":{"$cairn_payload":1}}`, `[{"$cairn_payload":1}]`, `"$cairn_payload"`} {
		if e.payloads.ByReference(json.RawMessage(s)) {
			t.Fatalf("%s would go by reference", s)
		}
	}
	for _, s := range []string{`{"$cairn_payload":{"sha256":"` + strings.Repeat("ab", 32) + `","bytes":5},"x":1}`, `{"$cairn_payload":1}`, `1`, `"a"`} {
		if IsPayloadRef(json.RawMessage(s)) {
			t.Fatalf("%s taken for a reference", s)
		}
	}
}

// TestPayloadRacingCompletes: completes of one lease with different large
// outputs and of different steps race; exactly one of each lease's
// completes applies, and every output resolves to what its winner sent.
func TestPayloadRacingCompletes(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		run := mustStart(t, e, "race", `{}`)
		ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 4, WaitMs: 2000})
		if err != nil || len(ls) != 4 {
			t.Fatalf("claim: %d %v", len(ls), err)
		}
		type result struct {
			step string
			out  json.RawMessage
			err  error
		}
		results := make(chan result, 8)
		var wg sync.WaitGroup
		for i, l := range ls {
			for k := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out := bigJSON(10*i+k, 70<<10+k)
					_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: out})
					results <- result{l.Step, out, err}
				}()
			}
		}
		wg.Wait()
		close(results)
		won := map[string]json.RawMessage{}
		for r := range results {
			switch reason, _ := IsRejection(r.err); {
			case r.err == nil:
				if won[r.step] != nil {
					t.Fatalf("two completes of %s applied", r.step)
				}
				won[r.step] = r.out
			case reason != cairn.ReasonAlreadyApplied:
				t.Fatalf("complete of %s: %v", r.step, r.err)
			}
		}
		rr := getRun(t, e, run)
		for _, l := range ls {
			if w := won[l.Step]; w == nil || string(stepOf(rr, l.Step).Output) != string(w) {
				t.Fatalf("step %s: output is not its winner's", l.Step)
			}
		}
		if n := len(payloadKeys(t, e, run)); n < 4 || n > 8 {
			t.Fatalf("%d payloads (winners, plus the losers' harmless orphans)", n)
		}
	}, wallClock(), withWorkflows("w", payloadFanOut("race", 4)))
}

// TestPayloadRenderBudget: a render that would resolve more than
// RenderResolveBytes fails the step with render_error naming the limit.
func TestPayloadRenderBudget(t *testing.T) {
	h := newHarness(t, withConfig(Config{RenderResolveBytes: 150 << 10}), wallClock(), withWorkflows("w", payloadFanOut("budget", 2)))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "budget", `{}`)
	for range 2 {
		l := claimOne(t, e, "w")
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: bigJSON(1, 100<<10)}); err != nil {
			t.Fatal(err)
		}
	}
	ls, _ := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1, WaitMs: 300})
	if len(ls) != 0 {
		t.Fatalf("join claimed despite the budget")
	}
	r := awaitRun(t, e, run, "with join failed", func(r *cairn.Run) bool { return stepOf(r, "join").Status == cairn.StepFailed })
	if j := stepOf(r, "join"); j.Error == nil || j.Error.Class != cairn.ClassRenderError || !strings.Contains(j.Error.Message, "153600-byte limit") {
		t.Fatalf("join error %+v", j.Error)
	}
}

var _ = blob.ErrNotFound

// TestPayloadSpillsNearTheRecordLimit: outputs under the inline limit stay
// inline until the run record passes a quarter of its limit; then they go
// by reference (a wide fan-out of 50 KB outputs, five times the record
// limit in all, used to fail with too_large).
func TestPayloadSpillsNearTheRecordLimit(t *testing.T) {
	// A 1 MiB record limit (8 MiB by default) and 100 steps keep the test
	// quick: 5 MB of 50 KB outputs is five times the limit, as 200 of them
	// are of the default one.
	h := newHarness(t, counted(), withConfig(Config{MaxRunRecordBytes: 1 << 20}), wallClock())
	ctx, e, counts := h.ctx, h.e, h.counts
	const width = 100
	register(t, e, "w", payloadFanOut("spill", width))
	run := mustStart(t, e, "spill", `{}`)
	for range width {
		l := claimOne(t, e, "w")
		var i int
		fmt.Sscanf(l.Step, "p%03d", &i)
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: bigJSON(i, 50<<10)}); err != nil {
			t.Fatalf("complete %s: %v", l.Step, err)
		}
	}
	l := claimOne(t, e, "w")
	var in struct{ Ns []int }
	if err := json.Unmarshal(l.Input, &in); err != nil || len(in.Ns) != width || in.Ns[width-1] != width-1 {
		t.Fatalf("join input: %v", err)
	}
	o, err := e.store.Get(ctx, e.keys.Run(run))
	if err != nil {
		t.Fatal(err)
	}
	spilled := len(payloadKeys(t, e, run))
	if spilled == 0 || spilled == width || len(o.Data) > e.cfg.MaxRunRecordBytes/2 {
		t.Fatalf("%d of %d outputs by reference, record %d bytes", spilled, width, len(o.Data))
	}
	t.Logf("%d outputs inline, %d spilled by reference; record %d bytes; requests %v", width-spilled, spilled, len(o.Data), counts.Snapshot())
}

// BenchmarkPayloadRequestsPerStep reports the blob requests per step of a
// two-step chain whose first output is small (1 KB, inline) or large
// (100 KB, by reference) and whose second step reads a field of it by
// template, with the instance's payload cache (the claim on the instance
// that completed) and without (another instance), on mem.
func BenchmarkPayloadRequestsPerStep(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
		cfg  Config
	}{
		{"small-1KB", 1 << 10, Config{}},
		{"large-100KB", 100 << 10, Config{}},
		{"large-100KB-uncached", 100 << 10, Config{PayloadCacheBytes: -1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sum counting.Snapshot
			for range b.N {
				p1, p2, p3, p4 := runTwoSteps(b, c.cfg, bigJSON(7, c.size))
				for _, p := range []counting.Snapshot{p1, p2, p3, p4} {
					sum = sum.Sub(counting.Snapshot{}.Sub(p)) // sum + p
				}
			}
			steps := float64(2 * b.N)
			b.ReportMetric(float64(sum.Total())/steps, "requests/step")
			b.ReportMetric(float64(sum.Get)/steps, "gets/step")
			b.ReportMetric(float64(sum.PutClass())/steps, "put-class/step")
		})
	}
}

// TestPayloadViewOfSeveralSinks: a run whose sinks' outputs are stored by
// reference shows its output (an object by sink) resolved, within the
// view's budget, and as references beyond it.
func TestPayloadViewOfSeveralSinks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		budget   int
		resolved bool
	}{{0, true}, {1, false}} {
		e := newTestEngine(t, nil, Config{ViewResolveBytes: c.budget})
		register(t, e, "w", cairn.Workflow{Name: "sinks", Version: "1", Steps: []cairn.Step{{ID: "a"}, {ID: "b"}}})
		run := mustStart(t, e, "sinks", `{}`)
		for range 2 {
			l := claimOne(t, e, "w")
			if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: bigJSON(len(l.Step), 90<<10)}); err != nil {
				t.Fatal(err)
			}
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(getRun(t, e, run).Output, &out); err != nil || len(out) != 2 {
			t.Fatalf("output: %v", err)
		}
		for _, s := range []string{"a", "b"} {
			if got := string(out[s]) == string(bigJSON(1, 90<<10)); got != c.resolved || IsPayloadRef(out[s]) == c.resolved {
				t.Fatalf("budget %d: sink %s resolved=%v, want %v", c.budget, s, got, c.resolved)
			}
		}
	}
}
