package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Tests of how an attempt ends: the class the worker reports for a panic,
// a shutdown, a timeout, and what it does when the engine refuses an end
// as too large.

// wireEnd is a complete or fail the worker sent, and its answer.
type wireEnd struct {
	call    string // complete or fail
	class   string
	message string
	patch   map[string]json.RawMessage
	status  int
	answer  string
}

// wire records the complete and fail calls a worker makes. answer, when
// set, may answer a call itself instead of the server (nil: forward it);
// n counts that call's kind from 1.
type wire struct {
	mu     sync.Mutex
	ends   []wireEnd
	counts map[string]int
	answer func(n int, c wireEnd, r *http.Request) *http.Response
}

func (wr *wire) client() *http.Client {
	return interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		var c wireEnd
		switch {
		case isCall(r, "/complete"):
			c.call = "complete"
		case isCall(r, "/fail"):
			c.call = "fail"
		default:
			return next.RoundTrip(r)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var req struct {
			Error      struct{ Class, Message string }
			StatePatch map[string]json.RawMessage `json:"state_patch"`
		}
		json.Unmarshal(b, &req)
		c.class, c.message, c.patch = req.Error.Class, req.Error.Message, req.StatePatch
		wr.mu.Lock()
		if wr.counts == nil {
			wr.counts = map[string]int{}
		}
		wr.counts[c.call]++
		n := wr.counts[c.call]
		wr.mu.Unlock()
		var resp *http.Response
		if wr.answer != nil {
			resp = wr.answer(n, c, r)
		}
		if resp == nil {
			var err error
			if resp, err = next.RoundTrip(r); err != nil {
				return resp, err
			}
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(rb))
		c.status, c.answer = resp.StatusCode, string(rb)
		wr.mu.Lock()
		wr.ends = append(wr.ends, c)
		wr.mu.Unlock()
		return resp, nil
	})
}

func (wr *wire) all() []wireEnd {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return append([]wireEnd(nil), wr.ends...)
}

func (wr *wire) fails() []wireEnd {
	var out []wireEnd
	for _, c := range wr.all() {
		if c.call == "fail" {
			out = append(out, c)
		}
	}
	return out
}

// tooLargeDetail is what the engine's too_large problem says, naming the
// limit.
const tooLargeDetail = "run r-1: the record would grow to 9000123 bytes, over the 8388608-byte limit"

// tooLarge is the engine's answer to a complete or fail that would grow
// the run record past its limit.
func tooLarge(r *http.Request) *http.Response {
	body := fmt.Sprintf(`{"status":409,"title":"Refused: too_large","detail":%q,"reason":"too_large"}`, tooLargeDetail)
	return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{"Content-Type": {"application/problem+json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

// The SDK never reports retryable on its own for a started at_most_once
// attempt: a panic is class panic, a body cut off by the drain is class
// interrupted (with the state patch and usage it recorded so far), a
// timeout is class timeout. (What the engine then does is
// TestAtMostOnceStartedIsNotRunAgain.)
func TestAtMostOnceNeverReportedRetryable(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	wr := &wire{}
	stuck := closedAtEnd(t)
	began := make(chan struct{}, 1)
	once := RetryPolicy{MaxAttempts: 1}
	wfs := []*WorkflowDef{
		Workflow("amo-panic", "1").Task("pay", Handle(func(StepContext, struct{}) (int, error) {
			panic("card service returned nonsense")
		}), AtMostOnce(), Retry(once)),
		Workflow("amo-timeout", "1").Task("pay", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			<-ctx.Done()
			return 0, Retryable(fmt.Errorf("charging: %w", ctx.Err()))
		}), AtMostOnce(), Retry(once), Timeout(200*time.Millisecond)),
		Workflow("amo-drain", "1").Task("pay", Handle(func(ctx StepContext, _ struct{}) (int, error) {
			ctx.SetState("charge", "ch_1")
			ctx.SetUsage(Usage{Model: "m", InputTokens: 7})
			began <- struct{}{}
			<-stuck // deaf to its context
			return 1, nil
		}), AtMostOnce(), Retry(once)),
	}
	logs := &logRecorder{}
	w := NewWorker(e.client(t, WithHTTPClient(wr.client())), WithConcurrency(3), WithLogger(slogOf(logs)),
		WithDrainTimeout(200*time.Millisecond)).Register(wfs...)
	stop := serve(t, w)
	for _, name := range []string{"amo-panic", "amo-timeout"} {
		r := waitRun(t, e.c, start(t, e.c, name, StartOptions{}).ID, 10*time.Second)
		if r.Status != RunFailed {
			t.Fatalf("%s: run %s", name, r.Status)
		}
	}
	drained := start(t, e.c, "amo-drain", StartOptions{})
	<-began
	stopWithin(t, stop, 5*time.Second)
	eventually(t, 5*time.Second, "three fails recorded", func() bool { return len(wr.fails()) >= 3 })
	fails := wr.fails()
	if len(fails) != 3 {
		t.Fatalf("fails %+v", fails)
	}
	classes := map[string]wireEnd{}
	for _, f := range fails {
		if f.class == ClassRetryable {
			t.Errorf("a started at_most_once attempt was reported retryable: %+v", f)
		}
		// (A timeout may race the reaper, which fails the attempt at
		// timeout_at too: that fail may be told fenced.)
		if f.status != 200 && f.class != ClassTimeout {
			t.Errorf("fail answered %d %s", f.status, f.answer)
		}
		classes[f.class] = f
	}
	if f, ok := classes[ClassPanic]; !ok || f.message != "panic: card service returned nonsense" {
		t.Errorf("panic: %+v", classes)
	}
	if f, ok := classes[ClassTimeout]; !ok || !strings.Contains(f.message, "attempt exceeded its timeout") {
		t.Errorf("timeout: %+v", classes)
	}
	f, ok := classes[ClassInterrupted]
	if !ok || !strings.Contains(f.message, "shut down before the step finished") || string(f.patch["charge"]) != `"ch_1"` {
		t.Errorf("interrupted: %+v", classes)
	}
	r, err := e.c.Get(context.Background(), drained.ID)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Step("pay").Attempts
	if len(a) == 0 || a[0].Error == nil || a[0].Error.Class != ClassInterrupted || a[0].Usage == nil || a[0].Usage.InputTokens != 7 {
		t.Fatalf("drained attempt %+v", a)
	}
	if string(r.State["charge"]) != `"ch_1"` {
		t.Fatalf("state %v", r.State)
	}
	if errs := logs.find("WORKER BUG"); len(errs) > 0 {
		t.Fatal(errs)
	}
}

// ENGINE-DEPENDENT (the at_most_once contract): a started at_most_once
// attempt that ends with any class — here a panic, and a shutdown that cut
// the body off — is not offered again; the step fails keeping the class.
// Listing the class in RetryAfterStart opts back into a retry.
func TestAtMostOnceStartedIsNotRunAgain(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	fast := RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond}
	optIn := fast
	optIn.RetryAfterStart = []string{ClassInterrupted}
	var panics, drained, optedIn atomic.Int32
	began := make(chan struct{}, 2)
	// cutOffOnce: the first body runs until the shutdown cuts it off,
	// later ones return out.
	cutOffOnce := func(runs *atomic.Int32, out int) Handler {
		return Handle(func(ctx StepContext, _ struct{}) (int, error) {
			if runs.Add(1) == 1 {
				began <- struct{}{}
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return out, nil
		})
	}
	build := func() []*WorkflowDef {
		return []*WorkflowDef{
			Workflow("amo-panic2", "1").Task("pay", Handle(func(StepContext, struct{}) (int, error) {
				panics.Add(1)
				panic("boom")
			}), AtMostOnce(), Retry(fast)),
			Workflow("amo-drain2", "1").Task("pay", cutOffOnce(&drained, 2), AtMostOnce(), Retry(fast)),
			Workflow("amo-optin", "1").Task("pay", cutOffOnce(&optedIn, 3), AtMostOnce(), Retry(optIn)),
		}
	}
	stop := serve(t, NewWorker(e.c, WithLogger(quiet()), WithConcurrency(4), WithDrainTimeout(100*time.Millisecond)).Register(build()...))
	p := waitRun(t, e.c, start(t, e.c, "amo-panic2", StartOptions{}).ID, 10*time.Second)
	d := start(t, e.c, "amo-drain2", StartOptions{})
	o := start(t, e.c, "amo-optin", StartOptions{})
	<-began
	<-began
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	serve(t, NewWorker(e.c, WithLogger(quiet()), WithConcurrency(4)).Register(build()...))
	dr := waitRun(t, e.c, d.ID, 10*time.Second)
	or := waitRun(t, e.c, o.ID, 10*time.Second)

	if p.Status != RunFailed || p.Error == nil || p.Error.Class != ClassPanic || panics.Load() != 1 || len(p.Step("pay").Attempts) != 1 {
		t.Errorf("panic: run %s %+v, body ran %d times", p.Status, p.Error, panics.Load())
	}
	if dr.Status != RunFailed || dr.Error == nil || dr.Error.Class != ClassInterrupted || drained.Load() != 1 {
		t.Errorf("drain: run %s %+v, body ran %d times", dr.Status, dr.Error, drained.Load())
	}
	if or.Status != RunCompleted || string(or.Output) != "3" || optedIn.Load() != 2 {
		t.Errorf("retry_after_start: run %s %s, body ran %d times", or.Status, or.Output, optedIn.Load())
	}
}

// A body the drain cancels that returns its output at once is reported as
// completed, not interrupted: its work is done.
func TestDrainReportsOutputOfCancelledBody(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	began := make(chan struct{})
	wf := Workflow("finishes", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (string, error) {
		close(began)
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), ErrShutdown) {
			return "", fmt.Errorf("cause %v", context.Cause(ctx))
		}
		return "saved what it had", nil
	}))
	stop := serve(t, NewWorker(e.c, WithLogger(quiet()), WithDrainTimeout(100*time.Millisecond)).Register(wf))
	run := start(t, e.c, "finishes", StartOptions{})
	<-began
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	r, err := e.c.Get(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RunCompleted || string(r.Output) != `"saved what it had"` || len(r.Step("s").Attempts) != 1 {
		t.Fatalf("run %s %s %+v", r.Status, r.Output, r.Step("s").Attempts)
	}
}

// An at_most_once attempt whose started was never acknowledged when the
// drain cuts it off is not reported (the engine would refuse it as
// not_started, a worker bug): its lease is left to expire.
func TestDrainDoesNotReportUnstartedAtMostOnce(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	wr := &wire{}
	release := closedAtEnd(t)
	startedSeen := make(chan struct{}, 1)
	hc := wr.client()
	inner := hc.Transport
	hc.Transport = roundTripper{next: http.DefaultTransport.(*http.Transport).Clone(), fn: func(r *http.Request, _ http.RoundTripper) (*http.Response, error) {
		if isCall(r, "/started") {
			// The started call hangs, deaf to cancellation, as a stuck
			// connection would.
			startedSeen <- struct{}{}
			<-release
			return nil, errors.New("simulated: connection reset")
		}
		return inner.RoundTrip(r)
	}}
	ran := make(chan struct{}, 1)
	wf := Workflow("amo-unstarted", "1").Task("pay", Handle(func(StepContext, struct{}) (int, error) {
		ran <- struct{}{}
		return 1, nil
	}), AtMostOnce())
	logs := &logRecorder{}
	w := NewWorker(e.client(t, WithHTTPClient(hc)), WithLogger(slogOf(logs)), WithDrainTimeout(100*time.Millisecond)).Register(wf)
	stop := serve(t, w)
	start(t, e.c, "amo-unstarted", StartOptions{})
	<-startedSeen
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if ends := wr.all(); len(ends) != 0 {
		t.Fatalf("reported %+v", ends)
	}
	if w.InFlight() != 0 {
		t.Fatalf("%d leases still held", w.InFlight())
	}
	if len(logs.find("cannot be reported")) != 1 || len(logs.find("WORKER BUG")) != 0 {
		logs.dump(t)
		t.Fatal("logs")
	}
	select {
	case <-ran:
		t.Fatal("the body ran")
	default:
	}
}

// The body's context carries the lease's timeout_at as its deadline; a
// body that returns because of it (even wrapped as retryable) is reported
// as class timeout. (This was already so; it stays so.)
func TestAttemptTimeoutDeadline(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	wr := &wire{}
	deadlines := make(chan string, 1)
	wf := Workflow("deadline", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (int, error) {
		dl, ok := ctx.Deadline()
		switch at := ctx.Info().TimeoutAt; {
		case !ok || at.IsZero():
			deadlines <- fmt.Sprintf("deadline %v %v, timeout_at %v", dl, ok, at)
		case !dl.Equal(at):
			deadlines <- fmt.Sprintf("deadline %v, want timeout_at %v", dl, at)
		default:
			deadlines <- ""
		}
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), ErrAttemptTimeout) {
			t.Errorf("cause %v", context.Cause(ctx))
		}
		return 0, Retryable(fmt.Errorf("calling upstream: %w", ctx.Err()))
	}), Timeout(300*time.Millisecond), Retry(RetryPolicy{MaxAttempts: 1}))
	serve(t, NewWorker(e.client(t, WithHTTPClient(wr.client())), WithLogger(quiet())).Register(wf))
	t0 := time.Now()
	r := waitRun(t, e.c, start(t, e.c, "deadline", StartOptions{}).ID, 10*time.Second)
	if msg := <-deadlines; msg != "" {
		t.Fatal(msg)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Fatalf("ended after %v", d)
	}
	if r.Status != RunFailed || r.Error.Class != ClassTimeout {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	// The wire records a call when its answer is read, which may be just
	// after the client saw the run end.
	eventually(t, 5*time.Second, "the fail recorded", func() bool { return len(wr.fails()) >= 1 })
	f := wr.fails()
	if len(f) != 1 || f[0].class != ClassTimeout || !strings.Contains(f[0].message, "calling upstream: context deadline exceeded") {
		t.Fatalf("fails %+v", f)
	}
}

// A complete refused as too_large fails the step with class
// output_too_large, naming the limit, instead of retrying complete; and
// that fail, refused as too_large in turn (the state patch is what does
// not fit), is sent once more without the state patch.
func TestCompleteTooLarge(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	wr := &wire{answer: func(n int, c wireEnd, r *http.Request) *http.Response {
		if n == 1 {
			return tooLarge(r) // the first complete, and the first fail
		}
		return nil
	}}
	wf := Workflow("huge", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (string, error) {
		ctx.SetState("notes", strings.Repeat("n", 100))
		ctx.SetUsage(Usage{Model: "m", InputTokens: 5})
		return strings.Repeat("x", 1000), nil
	}), Retry(RetryPolicy{MaxAttempts: 1}))
	logs := &logRecorder{}
	serve(t, NewWorker(e.client(t, WithHTTPClient(wr.client())), WithLogger(slogOf(logs))).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "huge", StartOptions{}).ID, 10*time.Second)
	if r.Status != RunFailed || r.Error == nil || r.Error.Class != ClassOutputTooLarge || !strings.Contains(r.Error.Message, "8388608-byte limit") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	// The wire records a call once its answer came back: the run may be
	// seen failed a moment before.
	eventually(t, 5*time.Second, "the third call recorded", func() bool { return len(wr.all()) >= 3 })
	ends := wr.all()
	if len(ends) != 3 {
		t.Fatalf("calls %+v", ends)
	}
	if c := ends[0]; c.call != "complete" || c.status != 409 {
		t.Fatalf("first call %+v", c)
	}
	if c := ends[1]; c.call != "fail" || c.class != ClassOutputTooLarge || c.patch["notes"] == nil || c.status != 409 ||
		!strings.Contains(c.message, tooLargeDetail) {
		t.Fatalf("second call %+v", c)
	}
	if c := ends[2]; c.call != "fail" || c.class != ClassOutputTooLarge || c.patch != nil || c.status != 200 ||
		!strings.Contains(c.message, "(state patch dropped: "+tooLargeDetail+")") {
		t.Fatalf("third call %+v", c)
	}
	if _, ok := r.State["notes"]; ok {
		t.Fatal("the dropped state patch was applied")
	}
	if a := r.Step("s").Attempts; len(a) != 1 || a[0].Usage == nil || a[0].Usage.InputTokens != 5 {
		t.Fatalf("attempts %+v", a)
	}
	if len(logs.find("refused the step's output as too large")) != 1 {
		logs.dump(t)
		t.Fatal("no log of the refusal")
	}
}

// A fail refused as too_large (its state patch does not fit) is sent once
// more without the state patch, keeping the body's class.
func TestFailTooLargeDropsStatePatch(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	wr := &wire{answer: func(n int, c wireEnd, r *http.Request) *http.Response {
		if c.call == "fail" && n == 1 {
			return tooLarge(r)
		}
		return nil
	}}
	wf := Workflow("hugefail", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (int, error) {
		ctx.SetState("dump", strings.Repeat("d", 100))
		return 0, Failure("declined", errors.New("card declined"))
	}), Retry(RetryPolicy{MaxAttempts: 1}))
	serve(t, NewWorker(e.client(t, WithHTTPClient(wr.client())), WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "hugefail", StartOptions{}).ID, 10*time.Second)
	if r.Status != RunFailed || r.Error.Class != "declined" || !strings.HasPrefix(r.Error.Message, "card declined (state patch dropped: ") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	eventually(t, 5*time.Second, "the second fail recorded", func() bool { return len(wr.fails()) >= 2 })
	f := wr.fails()
	if len(f) != 2 || f[0].patch == nil || f[1].patch != nil || f[1].class != "declined" || f[1].status != 200 {
		t.Fatalf("fails %+v", f)
	}
	if _, ok := r.State["dump"]; ok {
		t.Fatal("the dropped state patch was applied")
	}
}

// ENGINE-DEPENDENT (too_large): an output that would grow the run record
// past the engine's limit is refused with reason too_large, and the step
// fails with class output_too_large, the message naming the limit.
func TestOutputTooLargeEndToEnd(t *testing.T) {
	// Every value inline: by reference (the default) a 64 KiB output fits.
	e := newEnv(t, sdktest.Options{Engine: engine.Config{MaxRunRecordBytes: 32 << 10, PayloadInlineMax: -1}})
	wf := Workflow("bigout", "1").Task("s", Handle(func(ctx StepContext, _ struct{}) (string, error) {
		return strings.Repeat("x", 64<<10), nil
	}))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "bigout", StartOptions{}).ID, 10*time.Second)
	if r.Status != RunFailed || r.Error == nil || r.Error.Class != ClassOutputTooLarge || !strings.Contains(r.Error.Message, "limit") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	if a := r.Step("s").Attempts; len(a) != 1 {
		t.Fatalf("attempts %+v", a)
	}
}
