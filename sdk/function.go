package sdk

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// A durable function is a workflow written as ordinary code: its body
// calls operations on a *Durable — Step, Sleep, Now, Random, UUID,
// Patched — each named by the caller, and each operation's outcome is
// checkpointed in the bucket under the driver's lease. A crash, a
// deploy or a long sleep ends the attempt; the next attempt runs the
// body again and every operation already recorded returns its recorded
// outcome at once (replay). The body must therefore reach the same
// operations on every replay: see docs/FUNCTIONS.md for the rules.

// FunctionBody is the body of a durable function step.
type FunctionBody func(fc *Durable) (any, error)

// Durably makes a FunctionBody of a typed body: the run's input (the
// step's rendered input) is decoded into In, and Out is the output.
func Durably[In, Out any](body func(fc *Durable, in In) (Out, error)) FunctionBody {
	return func(fc *Durable) (any, error) {
		var in In
		if err := decodeInput(fc.sc.Input(), &in); err != nil {
			return nil, Fatal(fmt.Errorf("decoding the input of function %s into %T: %w", fc.sc.info.Workflow, in, err))
		}
		return body(fc, in)
	}
}

// Function makes a workflow of one durable function, step "main". Unlike
// a task, the function is not retried when its body returns an error (an
// operation's own retries are its Step's): pass Retry to change that.
//
//	sdk.Function("triage", "1", func(fc *sdk.Durable, t Ticket) (Reply, error) { … })
func Function[In, Out any](name, version string, body func(fc *Durable, in In) (Out, error), opts ...StepOption) *WorkflowDef {
	opts = append([]StepOption{Retry(RetryPolicy{MaxAttempts: 1})}, opts...)
	return Workflow(name, version).Function("main", Durably(body), opts...)
}

// Function adds a durable function step: body runs on a worker under a
// lease like a task's, and its operations are checkpointed (see Durable).
func (d *WorkflowDef) Function(id string, body FunctionBody, opts ...StepOption) *WorkflowDef {
	var h Handler
	if body != nil {
		h = func(ctx StepContext) (any, error) { return drive(ctx.(*stepCtx), body) }
	}
	return d.served(cairn.Step{ID: id, Kind: cairn.KindFunction}, h, opts)
}

// errSuspended ends a driver whose function suspended (a sleep): the
// engine ended its attempt, and nothing more is reported for it.
var errSuspended = errors.New("cairn: the function suspended; a later attempt goes on")

// inlineSleep is the longest sleep a driver waits out holding its lease;
// a longer one suspends the function (its worker slot is freed).
const inlineSleep = 2 * time.Second

// Checkpoints: what the function recorded is sent before each step's
// body starts (so a completed step never runs again), before a
// suspension and when the body returns; records made between (values,
// patches, a last step's result) go in the background once the oldest
// has waited flushDelay, or at once when flushOps wait.
const (
	flushOps   = 32
	flushDelay = 250 * time.Millisecond
)

// Durable is a durable function's context: a context.Context, cancelled
// when the lease is lost, the run ends or the function suspends, with the
// function's operations. Its methods are safe for concurrent use. Map and
// Parallel give each branch a Durable of its own scope.
type Durable struct {
	context.Context
	sc *stepCtx
	*journal
	scope  string         // "" for the body, /<name>#<k>/<i> for a branch
	uses   map[string]int // a name's uses so far in this scope (its ids' k); under mu
	onPark func()         // a Map branch's: gives its slot back (called with mu held)
}

// parking is a parked scope's suspension.
type parking struct {
	scope string
	sp    *client.Suspension
}

// journal is an attempt's history, shared by the body and its branches.
type journal struct {
	mu      sync.Mutex
	hist    []client.Operation // recorded and sent
	byID    map[string][]int   // positions in hist by id
	visited map[string]bool    // ids the body reached in this attempt
	pending []client.Operation // recorded, not sent yet
	stop    error              // set once the body must end: suspended, nondeterminism
	send    func(client.CheckpointRequest) error
	timer   *time.Timer // the background flush of pending
	flushMu sync.Mutex  // one checkpoint at a time: seqs stay in order
	// The barrier of branches (Map, Parallel): running counts the scopes
	// that may still record operations; a suspension waits (parked) until
	// none runs, and the attempt then suspends once, for all of them.
	running int
	parked  []parking
	// skew is the server's clock less this process's, as the lease told
	// it: a function's times (sleeps, timeouts, Now) are the server's,
	// which decides when they come due (a test server's clock is moved).
	skew time.Duration
}

// now is the server's time.
func (j *journal) now() time.Time { return time.Now().Add(j.skew) }

// serverSkew is the server's clock less this process's, from lease l
// received at got: the lease was made at its expiry less its TTL.
func serverSkew(l client.Lease, got time.Time) time.Duration {
	if l.LeaseTtlMs <= 0 || l.ExpiresAt.IsZero() {
		return 0
	}
	return l.ExpiresAt.Add(-time.Duration(l.LeaseTtlMs) * time.Millisecond).Sub(got)
}

func newDurable(sc *stepCtx, hist []client.Operation, send func(client.CheckpointRequest) error) *Durable {
	j := &journal{hist: hist, byID: map[string][]int{}, visited: map[string]bool{}, send: send, running: 1,
		skew: serverSkew(sc.att.lease, sc.att.began)}
	for i, op := range hist {
		j.byID[op.Id] = append(j.byID[op.Id], i)
	}
	return &Durable{Context: sc, sc: sc, journal: j, uses: map[string]int{}}
}

// drive runs a function body for one attempt of its driver step.
func drive(sc *stepCtx, body FunctionBody) (any, error) {
	var hist []client.Operation
	if h := sc.att.lease.History; h != nil {
		hist = *h
	}
	if err := openHistory(sc.worker.keyring(), hist); err != nil { // codec.go
		return nil, err
	}
	var fc *Durable
	fc = newDurable(sc, hist, func(req client.CheckpointRequest) error {
		req, err := fc.sealCheckpoint(req) // codec.go
		if err != nil {
			return Fatal(err)
		}
		return sc.worker.checkpoint(sc.att, req)
	})
	defer fc.stopTimer()
	out, err := body(fc)
	if errors.Is(context.Cause(sc), ErrShutdown) {
		// The worker is draining: the function goes on in another attempt
		// (no failure spent), from what it recorded.
		now := fc.now()
		if ferr := fc.flush(&client.Suspension{Until: &now}); ferr != nil {
			return nil, ferr
		}
		return nil, errSuspended
	}
	var cont *continueAsNew
	if errors.As(err, &cont) { // the run ends as a returned body's does
		out, err = nil, nil
	}
	fc.mu.Lock()
	stop := fc.stop
	if stop == nil && err == nil {
		stop = fc.unreached()
	}
	fc.mu.Unlock()
	if stop != nil {
		return nil, stop
	}
	if ferr := fc.flush(nil); ferr != nil && err == nil {
		return nil, ferr
	}
	if cont != nil {
		sc.att.continueAs = cont.input
	}
	return out, err
}

// ContinueAsNew ends the function's run by starting a new run of the
// same workflow and version with input and an empty history, for a loop
// that would outgrow its history: the body returns it as its error,
//
//	return nil, sdk.ContinueAsNew(State{Page: next})
//
// The run completes with output {"continued_as": <the new run's id>};
// Client.Wait follows the chain to its last run. A run
// a parent started (a child step, an Invoke) cannot continue as new.
func ContinueAsNew(input any) error {
	in, err := toJSON(input)
	if err != nil {
		return Fatal(fmt.Errorf("encoding the input of the run to continue as: %w", err))
	}
	return &continueAsNew{input: in}
}

type continueAsNew struct{ input json.RawMessage }

func (*continueAsNew) Error() string { return "cairn: the function continues as a new run" }

func (fc *Durable) stopTimer() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.timer != nil {
		fc.timer.Stop()
	}
}

// unreached is the nondeterminism of a body that returned leaving
// recorded operations unreached. Called with mu held.
func (fc *Durable) unreached() error {
	for _, op := range fc.hist {
		if !fc.visited[op.Id] {
			return fc.broken(fmt.Sprintf("the body returned without reaching %s %q (seq %d), which the history records", op.Kind, op.Id, op.Seq))
		}
	}
	return nil
}

// broken stops the body for nondeterminism. Called with mu held.
func (fc *Durable) broken(what string) error {
	if fc.stop == nil {
		fc.stop = Failure(cairn.ClassNondeterminism, errors.New("nondeterminism in run "+fc.sc.info.Run+": "+what+
			"; the code changed under a run in flight: gate changes with Patched (docs/FUNCTIONS.md)"))
	}
	return fc.stop
}

// Info describes the driver's attempt.
func (fc *Durable) Info() StepInfo { return fc.sc.Info() }

// Resumed and Interrupted are StepContext's: a function body may return
// Interrupt(payload) too, and its resumed attempts replay its history.
func (fc *Durable) Resumed(v any) (bool, error)     { return fc.sc.Resumed(v) }
func (fc *Durable) Interrupted(v any) (bool, error) { return fc.sc.Interrupted(v) }

// Logger is the worker's logger for the driver's attempt.
func (fc *Durable) Logger() *slog.Logger { return fc.sc.Logger() }

// begin names the next use of name and returns its id and what the
// history holds for it (nil: new), or the error that ends the body.
// Called with mu held.
func (fc *Durable) begin(name string, kind cairn.OperationKind) (string, []client.Operation, error) {
	if fc.stop != nil {
		return "", nil, fc.stop
	}
	if fc.Err() != nil {
		return "", nil, context.Cause(fc)
	}
	id := fc.scope + "/" + name + "#" + strconv.Itoa(fc.uses[name])
	fc.uses[name]++
	fc.visited[id] = true
	var recs []client.Operation
	for _, i := range fc.byID[id] {
		recs = append(recs, fc.hist[i])
	}
	for _, op := range fc.pending {
		if op.Id == id {
			recs = append(recs, op)
		}
	}
	if len(recs) > 0 && recs[0].Kind != string(kind) {
		return "", nil, fc.broken(fmt.Sprintf("replay reached %s %q where the history records %s %q (seq %d)", kind, id, recs[0].Kind, id, recs[0].Seq))
	}
	return id, recs, nil
}

// record adds an operation to what is sent next. Called with mu held.
func (fc *Durable) record(op client.Operation) {
	op.Seq = int64(len(fc.hist) + len(fc.pending))
	if len(fc.pending) == 0 {
		fc.armFlush()
	}
	fc.pending = append(fc.pending, op)
}

// armFlush sends what is pending in flushDelay. Called with mu held.
func (fc *Durable) armFlush() {
	if fc.timer == nil {
		fc.timer = time.AfterFunc(flushDelay, func() { _ = fc.flush(nil) }) // a failure cancels the body, or the next flush retries
		return
	}
	fc.timer.Reset(flushDelay)
}

// due reports whether enough operations wait to send them now.
func (fc *Durable) due() bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.pending) >= flushOps
}

// flush sends the pending operations in one checkpoint, with the
// suspension sp when it is set.
func (fc *Durable) flush(sp *client.Suspension) error {
	fc.flushMu.Lock()
	defer fc.flushMu.Unlock()
	for {
		fc.mu.Lock()
		n := len(fc.pending)
		ops := slices.Clone(fc.pending[:min(n, maxCheckpointOps)])
		fc.mu.Unlock()
		last := n <= maxCheckpointOps // else the rest in the next call
		if last && n == 0 && sp == nil {
			return nil
		}
		var with *client.Suspension
		if last {
			with = sp
		}
		if err := fc.sendOps(ops, with); err != nil || last {
			return err
		}
	}
}

// maxCheckpointOps is the most operations one checkpoint carries (the
// engine's bound is 1,000).
const maxCheckpointOps = 500

// sendOps checkpoints ops, the oldest pending ones, with sp; once they
// are recorded they leave pending for the history. Called with flushMu
// held.
func (fc *Durable) sendOps(ops []client.Operation, sp *client.Suspension) error {
	req := client.CheckpointRequest{Operations: ops, Suspend: sp}
	if sp != nil { // the attempt ends: what it consumed goes with it
		req.Usage = usageTo(fc.sc.usage.total())
	}
	if err := fc.send(req); err != nil {
		return err
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for _, op := range ops {
		fc.byID[op.Id] = append(fc.byID[op.Id], len(fc.hist))
		fc.hist = append(fc.hist, op)
	}
	fc.pending = fc.pending[len(ops):]
	if len(fc.pending) > 0 {
		fc.armFlush()
	}
	return nil
}

// Step runs fn once for the function: its result is checkpointed, and a
// replay returns it without running fn again. opts are a task's: Retry
// (fn is retried in this attempt, backing off; an error's class decides
// as for a task), Timeout (of each try), AtMostOnce (fn is never run
// again once it started, even after a crash: a replay that finds it
// started without an outcome fails it with class lost). An error that
// ends the step is returned with its class; the body may handle it or
// return it, failing the function.
func Step[T any](fc *Durable, name string, fn func(ctx context.Context) (T, error), opts ...StepOption) (T, error) {
	var zero T
	s := cairn.Step{ID: name, Kind: cairn.KindTask}
	for _, o := range opts {
		if err := o(&s); err != nil {
			return zero, Fatal(fmt.Errorf("step %q: %w", name, err))
		}
	}
	fc.mu.Lock()
	id, recs, err := fc.begin(name, cairn.OpStep)
	fc.mu.Unlock()
	if err != nil {
		return zero, err
	}
	s.ID = id
	fc.mu.Lock()
	retries := fc.retries(id) // backoffs an earlier attempt suspended for
	fc.mu.Unlock()
	if len(recs) > 0 {
		return replayStep[T](fc, id, recs[len(recs)-1])
	}
	atMostOnce := s.EffectiveDelivery() == cairn.AtMostOnce
	if atMostOnce {
		fc.mu.Lock()
		fc.record(client.Operation{Id: id, Kind: string(cairn.OpStep), Status: string(cairn.OpStarted)})
		fc.mu.Unlock()
	}
	// What the function recorded so far — the previous step's result
	// above all — is durable before this step's side effects begin: a
	// step that completed never runs again, and an at_most_once step's
	// start is on record before its body.
	if err := fc.flush(nil); err != nil {
		return zero, err
	}
	v, why, stop := runStep(fc, s, fn, atMostOnce, retries)
	if stop != nil {
		return zero, stop
	}
	op := client.Operation{Id: id, Kind: string(cairn.OpStep), Status: string(cairn.OpCompleted)}
	if why == nil {
		result, err := toJSON(v)
		if err != nil {
			why = &client.ErrorInfo{Class: cairn.ClassFatal, Message: fmt.Sprintf("encoding the result of step %q: %v", id, err)}
		}
		op.Result = result
	}
	if cause := context.Cause(fc); fc.Err() != nil && (why != nil || !keepsResults(cause)) {
		// The lease is gone, the run ended, the function suspended or lost
		// a race — or the body was cut off: record nothing (it runs again).
		return zero, cause
	}
	if why != nil {
		op.Status, op.Result, op.Error = string(cairn.OpFailed), nil, why
	}
	fc.mu.Lock()
	fc.record(op)
	fc.mu.Unlock()
	// An at_most_once step's outcome is durable at once: a crash before
	// the next checkpoint would fail it as lost although it ran.
	if atMostOnce || fc.due() {
		if err := fc.flush(nil); err != nil {
			return zero, err
		}
	}
	if why != nil {
		return zero, opError(why)
	}
	return v, nil
}

// replayStep returns what a step recorded (last, its latest record): its
// result or error; started without an outcome, an at_most_once step is
// failed as lost, not run again.
func replayStep[T any](fc *Durable, id string, last client.Operation) (v T, _ error) {
	switch cairn.OperationStatus(last.Status) {
	case cairn.OpCompleted:
		raw, err := fc.resolve(last.Result) // a large result is stored by reference
		if err != nil {
			return v, err
		}
		if err := decodeInput(raw, &v); err != nil {
			return v, Fatal(fmt.Errorf("decoding the recorded result of step %q into %T: %w", id, v, err))
		}
		return v, nil
	case cairn.OpFailed:
		return v, opError(last.Error)
	}
	why := &client.ErrorInfo{Class: cairn.ClassLost, Message: "at_most_once step " + id + " started in an earlier attempt without recording an outcome: it is not run again"}
	fc.mu.Lock()
	fc.record(client.Operation{Id: id, Kind: string(cairn.OpStep), Status: string(cairn.OpFailed), Error: why})
	fc.mu.Unlock()
	return v, opError(why)
}

// keepsResults reports whether a function whose context ended with cause
// still records what its steps returned: a draining worker and an
// attempt's timeout end the attempt after one more checkpoint (drive),
// the other causes end it without one.
func keepsResults(cause error) bool {
	return errors.Is(cause, ErrShutdown) || errors.Is(cause, ErrAttemptTimeout)
}

// runStep runs fn until it succeeds or its error ends the step (why), or
// the function suspends for a backoff (stop, which the body returns). A
// backoff longer than inlineSleep is a recorded sleep, <id>.retry#<n>,
// whose result is the failures so far: the attempt suspends until it, and
// the next one goes on from the try after it (retries: the records an
// earlier attempt made).
func runStep[T any](fc *Durable, s cairn.Step, fn func(ctx context.Context) (T, error), atMostOnce bool, retries []client.Operation) (v T, why *client.ErrorInfo, stop error) {
	policy := s.Retry.WithDefaults()
	failures := 0
	for _, r := range retries {
		if r.Kind != string(cairn.OpSleep) {
			return v, nil, fc.broken(fmt.Sprintf("replay reached the backoff %s of step %s where the history records %s %q (seq %d)", r.Id, s.ID, r.Kind, r.Id, r.Seq))
		}
	}
	if n := len(retries); n > 0 {
		var last struct{ Failures int }
		if err := json.Unmarshal(retries[n-1].Result, &last); err != nil || retries[n-1].WakeAt == nil {
			return v, nil, fc.broken(fmt.Sprintf("the retry recorded as %s is not a backoff this SDK records", retries[n-1].Id))
		}
		failures = last.Failures
		if err := fc.backoffUntil(*retries[n-1].WakeAt); err != nil {
			return v, nil, err
		}
	}
	for failures++; ; failures++ {
		v, err := tryStep(fc, s, fn)
		if err == nil {
			return v, nil, nil
		}
		class, msg := classify(err)
		why = &client.ErrorInfo{Class: class, Message: msg}
		if atMostOnce || !policy.Retries(class) || failures >= policy.MaxAttempts || fc.Err() != nil {
			return v, why, nil
		}
		d := policy.Backoff(failures)
		if d > inlineSleep {
			wake := fc.now().Add(d)
			fc.mu.Lock()
			fc.record(client.Operation{Id: s.ID + ".retry#" + strconv.Itoa(len(retries)), Kind: string(cairn.OpSleep),
				Status: string(cairn.OpCompleted), WakeAt: &wake, Result: json.RawMessage(`{"failures":` + strconv.Itoa(failures) + `}`)})
			fc.mu.Unlock()
			return v, nil, fc.suspend(&client.Suspension{Until: &wake})
		}
		if err := fc.backoffUntil(fc.now().Add(d)); err != nil {
			return v, why, nil
		}
	}
}

// retries returns the backoffs recorded for step id (<id>.retry#<n>, in
// order), marking them reached. Called with mu held.
func (fc *Durable) retries(id string) []client.Operation {
	var out []client.Operation
	for n := 0; ; n++ {
		rid := id + ".retry#" + strconv.Itoa(n)
		i, ok := fc.byID[rid]
		if !ok {
			return out
		}
		fc.visited[rid] = true
		out = append(out, fc.hist[i[0]])
	}
}

// backoffUntil waits for t in the attempt when it is near, else suspends
// the function until then (recording nothing: the backoff is recorded).
func (fc *Durable) backoffUntil(t time.Time) error {
	left := t.Sub(fc.now())
	if left > inlineSleep {
		return fc.suspend(&client.Suspension{Until: &t})
	}
	return fc.sleepInline(max(left, 0))
}

// sleepInline waits d in the attempt, or until the function's context
// ends: then it returns the context's cause.
func (fc *Durable) sleepInline(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-fc.Done():
		return context.Cause(fc)
	case <-t.C:
		return nil
	}
}

// tryStep runs fn once, bounded by the step's timeout, a panic turned
// into an error of class panic.
func tryStep[T any](fc *Durable, s cairn.Step, fn func(ctx context.Context) (T, error)) (v T, err error) {
	// Each try is a span under the function's step span (its gen_ai
	// usage sums into the step's, as a task body's spans do).
	ctx, span := fc.sc.worker.tracer.Start(fc, "operation "+s.ID, trace.WithAttributes(
		attribute.String("cairn.operation", s.ID), attribute.String("cairn.operation.kind", string(cairn.OpStep))))
	defer func() {
		if err != nil {
			class, msg := classify(err)
			span.SetStatus(codes.Error, msg)
			span.SetAttributes(attribute.String("cairn.error.class", class))
		}
		span.End()
	}()
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout.D())
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			fc.sc.log.Error("a function's step panicked; reporting it as class panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = Failure(cairn.ClassPanic, fmt.Errorf("panic: %v", r))
		}
	}()
	v, err = fn(ctx)
	if err != nil && ctx.Err() != nil && fc.Err() == nil && ClassOf(err) == cairn.ClassFatal {
		// The step's own timeout cut it off: class timeout, as a task's.
		err = Failure(cairn.ClassTimeout, fmt.Errorf("step %s exceeded its timeout of %s: %w", s.ID, s.Timeout.D(), err))
	}
	return v, err
}

func opError(e *client.ErrorInfo) error {
	if e == nil {
		return Fatal(errors.New("a failed operation without its error"))
	}
	return Failure(e.Class, errors.New(e.Message))
}

// Sleep waits d; see SleepUntil.
func (fc *Durable) Sleep(name string, d time.Duration) error {
	return fc.sleep(name, func() time.Time { return fc.now().Add(d) })
}

// SleepUntil waits until t. A wait longer than a couple of seconds
// suspends the function: the attempt ends, the worker's slot is freed,
// and the next attempt replays the body at t. The end is recorded, so a
// replay waits for the same time. An error (the function suspended, the
// lease was lost) must be returned by the body.
func (fc *Durable) SleepUntil(name string, t time.Time) error {
	return fc.sleep(name, func() time.Time { return t })
}

func (fc *Durable) sleep(name string, end func() time.Time) error {
	fc.mu.Lock()
	id, recs, err := fc.begin(name, cairn.OpSleep)
	var wake time.Time
	switch {
	case err != nil:
	case len(recs) > 0 && recs[0].WakeAt != nil:
		wake = *recs[0].WakeAt
	default:
		wake = end()
		fc.record(client.Operation{Id: id, Kind: string(cairn.OpSleep), Status: string(cairn.OpCompleted), WakeAt: &wake})
	}
	fc.mu.Unlock()
	if err != nil {
		return err
	}
	left := wake.Sub(fc.now())
	if left <= 0 {
		return nil
	}
	if left <= inlineSleep {
		return fc.sleepInline(left)
	}
	return fc.suspend(&client.Suspension{Until: &wake})
}

// suspend ends the attempt as sp says, sending what is pending: the body
// must return (the error it gets says so). In a branch, it waits until no
// other branch runs: the attempt suspends once for all of them.
func (fc *Durable) suspend(sp *client.Suspension) error {
	fc.mu.Lock()
	fc.parked = append(fc.parked, parking{fc.scope, sp})
	fc.running--
	if fc.onPark != nil {
		fc.onPark() // its slot to a branch waiting for one, which runs
	}
	last := fc.running == 0
	fc.mu.Unlock()
	if last {
		return fc.suspendNow()
	}
	<-fc.Done()
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.stop != nil {
		return fc.stop
	}
	fc.unpark(fc.scope) // its own context ended (a race lost), not the attempt
	return context.Cause(fc)
}

// unpark takes the parked suspensions of scope and the scopes under it
// back: they run again (to their end). Called with mu held.
func (fc *Durable) unpark(scope string) {
	kept := fc.parked[:0]
	for _, p := range fc.parked {
		if p.scope == scope || strings.HasPrefix(p.scope, scope+"/") {
			fc.running++
			continue
		}
		kept = append(kept, p)
	}
	fc.parked = kept
}

// leave is a branch's end: the last scope running suspends the attempt
// for the parked ones.
func (fc *Durable) leave() {
	fc.mu.Lock()
	fc.running--
	last := fc.running == 0 && len(fc.parked) > 0
	fc.mu.Unlock()
	if last {
		_ = fc.suspendNow() // the parked branches get its outcome from the context
	}
}

// suspendNow suspends the attempt for every parked suspension at once:
// until the earliest time, and for one operation's event or run (the
// others suspend again when the next attempt replays to them; an event
// for them meanwhile is kept for them).
func (fc *Durable) suspendNow() error {
	fc.mu.Lock()
	var sp client.Suspension
	for _, pk := range fc.parked {
		p := pk.sp
		if p.Op != nil && sp.Op == nil {
			sp.Op, sp.Event, sp.Invoke = p.Op, p.Event, p.Invoke
		}
		if p.Until != nil && (sp.Until == nil || p.Until.Before(*sp.Until)) {
			sp.Until = p.Until
		}
	}
	fc.mu.Unlock()
	err := fc.flush(&sp)
	fc.mu.Lock()
	if err == nil && fc.stop == nil {
		fc.stop = errSuspended
	}
	fc.mu.Unlock()
	if err != nil {
		fc.sc.att.cancel(err)
		return err
	}
	fc.sc.att.cancel(errSuspended)
	return errSuspended
}

// Map runs fn on each item, at most limit at once (0: all at once), each
// in a scope of its own (its operations' ids are under
// /<name>#<k>/<index>), and returns the outputs in the items' order, or
// the error of the first item (by index) that failed. A branch that
// sleeps, waits or invokes parks until no branch runs; the function then
// suspends once for all of them. Waits and invokes of several branches
// are taken one per suspension.
func Map[In, Out any](fc *Durable, name string, items []In, limit int, fn func(fc *Durable, item In) (Out, error)) ([]Out, error) {
	fc.mu.Lock()
	if fc.stop != nil {
		defer fc.mu.Unlock()
		return nil, fc.stop
	}
	base := fc.scope + "/" + name + "#" + strconv.Itoa(fc.uses[name])
	fc.uses[name]++
	if len(items) == 0 {
		fc.mu.Unlock()
		return []Out{}, nil
	}
	fc.mu.Unlock()
	n := len(items)
	if limit <= 0 || limit > n {
		limit = n
	}
	out, errs := make([]Out, n), make([]error, n)
	var wg sync.WaitGroup
	next := 0 // under mu: the next item to start
	var take func()
	// take starts the next item waiting for a slot, counted as running
	// from then on; called with mu held when a slot is free (at the start,
	// or when a branch ended or parked), so a branch waiting for a slot
	// never counts as running and the barrier is never held by one.
	take = func() {
		if next == n {
			return
		}
		i := next
		next++
		fc.running++
		wg.Go(func() {
			var once sync.Once
			release := func() { once.Do(take) } // with mu held
			b := &Durable{Context: fc.Context, sc: fc.sc, journal: fc.journal, scope: base + "/" + strconv.Itoa(i), uses: map[string]int{}, onPark: release}
			out[i], errs[i] = fn(b, items[i])
			fc.mu.Lock()
			release() // hand the slot on before leaving
			fc.mu.Unlock()
			fc.leave()
		})
	}
	fc.mu.Lock()
	fc.running-- // the caller waits for the branches
	for range limit {
		take()
	}
	fc.mu.Unlock()
	wg.Wait()
	fc.mu.Lock()
	fc.running++
	stop := fc.stop
	fc.mu.Unlock()
	if stop != nil {
		return out, stop
	}
	for i, err := range errs {
		if err != nil {
			return out, fmt.Errorf("%s item %d: %w", name, i, err)
		}
	}
	return out, nil
}

// errRaceLost ends the branches of a race once another ended first.
var errRaceLost = errors.New("cairn: another branch of the race ended first")

// Race runs branches at once, each in a scope of its own (see Map), and
// returns the index and the outcome (its result or its error) of the one
// that ends first; the others are cancelled (what they recorded stays,
// unread). The winner is recorded: a replay runs only it. A branch that
// sleeps, waits or invokes parks as in Map, so a race of a wait against a
// sleep suspends the function until the first of them.
//
//	i, _, err := sdk.Race(fc, "approval-or-timeout", waitApproval, sleepADay)
func Race[T any](fc *Durable, name string, branches ...func(fc *Durable) (T, error)) (int, T, error) {
	var zero T
	fc.mu.Lock()
	id, recs, err := fc.begin(name, cairn.OpValue)
	fc.mu.Unlock()
	if err != nil || len(branches) == 0 {
		return -1, zero, err
	}
	scope := func(i int) string { return id + "/" + strconv.Itoa(i) }
	branch := func(ctx context.Context, i int) *Durable {
		return &Durable{Context: ctx, sc: fc.sc, journal: fc.journal, scope: scope(i), uses: map[string]int{}}
	}
	if len(recs) > 0 { // decided: the losers' records stay unread
		var w int
		if err := json.Unmarshal(recs[0].Result, &w); err != nil || w < 0 || w >= len(branches) {
			fc.mu.Lock()
			defer fc.mu.Unlock()
			return -1, zero, fc.broken(fmt.Sprintf("race %q recorded winner %s of %d branches", id, recs[0].Result, len(branches)))
		}
		fc.mu.Lock()
		fc.lost(id, scope(w))
		fc.mu.Unlock()
		v, err := branches[w](branch(fc.Context, w))
		return w, v, err
	}
	type outcome struct {
		v   T
		err error
	}
	outs := make([]outcome, len(branches))
	cancels := make([]context.CancelCauseFunc, len(branches))
	winner := -1
	fc.mu.Lock()
	fc.running += len(branches) - 1 // the caller waits for the branches
	fc.mu.Unlock()
	ctxs := make([]context.Context, len(branches))
	for i := range branches { // all made before any branch can cancel another
		ctxs[i], cancels[i] = context.WithCancelCause(fc.Context)
	}
	var wg sync.WaitGroup
	for i, run := range branches {
		ctx := ctxs[i]
		wg.Go(func() {
			defer fc.leave()
			v, err := run(branch(ctx, i))
			outs[i] = outcome{v, err}
			fc.mu.Lock()
			defer fc.mu.Unlock()
			if winner >= 0 || errors.Is(err, errSuspended) || fc.stop != nil || ctx.Err() != nil {
				return
			}
			winner = i
			raw, _ := json.Marshal(i)
			fc.record(client.Operation{Id: id, Kind: string(cairn.OpValue), Status: string(cairn.OpCompleted), Result: raw})
			for j := range branches { // before this branch leaves: no loser counts as parked
				if j != i {
					fc.unpark(scope(j))
					cancels[j](errRaceLost)
				}
			}
			fc.lost(id, scope(i))
		})
	}
	wg.Wait()
	for _, c := range cancels {
		c(nil)
	}
	fc.mu.Lock()
	fc.running++
	stop := fc.stop
	fc.mu.Unlock()
	if stop != nil || winner < 0 {
		if stop == nil {
			stop = context.Cause(fc)
		}
		return -1, zero, stop
	}
	return winner, outs[winner].v, outs[winner].err
}

// lost marks what the losing branches of race id recorded as reached:
// they are not run again, and what they did stays unread. Called with mu
// held.
func (fc *Durable) lost(id, winner string) {
	for _, op := range fc.hist {
		if strings.HasPrefix(op.Id, id+"/") && !strings.HasPrefix(op.Id, winner+"/") {
			fc.visited[op.Id] = true
		}
	}
}

// Parallel runs branches at once, each in a scope of its own (see Map),
// and returns the first error (by position).
func (fc *Durable) Parallel(name string, branches ...func(fc *Durable) error) error {
	_, err := Map(fc, name, branches, 0, func(fc *Durable, b func(*Durable) error) (struct{}, error) { return struct{}{}, b(fc) })
	return err
}

// WaitEvent waits for an event named event sent to the run
// (Client.SendEvent, `cairn runs event`) and returns its payload. The
// function suspends meanwhile: the attempt ends, and the next one, made
// claimable by the event, replays the body to here. With timeout > 0, an
// event that has not come by then is not waited for: WaitEvent returns
// an error of class timeout (the body may handle it). An event sent
// before the wait starts is kept for it.
func (fc *Durable) WaitEvent(name, event string, timeout time.Duration) (json.RawMessage, error) {
	op, err := fc.wait(name, event, timeout)
	if err != nil {
		return nil, err
	}
	return fc.resolve(op.Result) // an event's payload may be stored by reference
}

// wait is WaitEvent's operation: its completed record, once the engine
// recorded the event.
func (fc *Durable) wait(name, event string, timeout time.Duration) (*client.Operation, error) {
	fc.mu.Lock()
	id, recs, err := fc.begin(name, cairn.OpWait)
	if err != nil {
		fc.mu.Unlock()
		return nil, err
	}
	var deadline *time.Time
	if len(recs) == 0 {
		if timeout > 0 {
			t := fc.now().Add(timeout)
			deadline = &t
		}
		fc.record(client.Operation{Id: id, Kind: string(cairn.OpWait), Status: string(cairn.OpStarted), WakeAt: deadline})
	} else {
		deadline = recs[0].WakeAt
	}
	outcome := lastOutcome(recs)
	// The engine's clock decides a timeout: this attempt was claimed past
	// the deadline, so the engine takes no event for the wait any more.
	l := fc.sc.att.lease
	claimed := l.ExpiresAt.Add(-time.Duration(l.LeaseTtlMs) * time.Millisecond)
	if outcome == nil && len(recs) > 0 && deadline != nil && !claimed.Before(*deadline) {
		why := &client.ErrorInfo{Class: cairn.ClassTimeout, Message: fmt.Sprintf("no event %q by %s (wait %s)", event, deadline.UTC().Format(time.RFC3339), id)}
		fc.record(client.Operation{Id: id, Kind: string(cairn.OpWait), Status: string(cairn.OpFailed), Error: why})
		fc.mu.Unlock()
		return nil, opError(why)
	}
	fc.mu.Unlock()
	switch {
	case outcome != nil && outcome.Status == string(cairn.OpCompleted):
		return outcome, nil
	case outcome != nil:
		return nil, opError(outcome.Error)
	}
	return nil, fc.suspend(&client.Suspension{Event: &event, Op: &id, Until: deadline})
}

// value records what gen returns under name, or returns what was
// recorded. A failure ends the body: value returns the zero value then,
// and the driver reports the failure whatever the body returns.
func (fc *Durable) value(name string, v any, gen func() any) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	id, recs, err := fc.begin(name, cairn.OpValue)
	if err != nil {
		return
	}
	if len(recs) > 0 {
		if err := json.Unmarshal(recs[0].Result, v); err != nil {
			fc.broken(fmt.Sprintf("the value recorded for %q does not decode into %T: %v", id, v, err))
		}
		return
	}
	raw, _ := json.Marshal(gen())
	_ = json.Unmarshal(raw, v)
	fc.record(client.Operation{Id: id, Kind: string(cairn.OpValue), Status: string(cairn.OpCompleted), Result: raw})
}

// Now is the time, recorded: a replay sees the same time.
func (fc *Durable) Now() time.Time {
	var t time.Time
	fc.value("now", &t, func() any { return fc.now().UTC() })
	return t
}

// Random is a random float64 in [0, 1), recorded.
func (fc *Durable) Random() float64 {
	var f float64
	fc.value("random", &f, func() any { return mrand.Float64() })
	return f
}

// UUID is a random (version 4) UUID, recorded.
func (fc *Durable) UUID() string {
	var s string
	fc.value("uuid", &s, func() any {
		var b [16]byte
		_, _ = rand.Read(b[:])
		b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	})
	return s
}

// Patched reports whether the run takes the code path that change id
// introduced: true for a run that reaches it first (the choice is
// recorded), false for a run whose history was recorded by the code
// before the change (it still holds operations this attempt has not
// reached). Remove the check once no run in flight predates the change.
//
//	if fc.Patched("fraud-check") { … new code … } else { … old code … }
func (fc *Durable) Patched(id string) bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	key, recs, err := fc.begin("patch:"+id, cairn.OpPatch)
	switch {
	case err != nil:
		return false
	case len(recs) > 0:
		return true
	case slices.ContainsFunc(fc.hist, func(op client.Operation) bool { return !fc.visited[op.Id] }):
		return false // replaying what the code before the change recorded
	}
	fc.record(client.Operation{Id: key, Kind: string(cairn.OpPatch), Status: string(cairn.OpCompleted)})
	return true
}

// Call names the run Invoke starts: a workflow (a DAG or a function,
// served by any worker in any language), its version (the newest when the
// run starts, if empty) and its input.
type Call struct {
	Workflow, Version string
	Input             any
}

// Invoke starts a run for the function and waits for it (the function
// suspends meanwhile), returning its output decoded into T, or its error
// (its class kept). The run starts once, however often the body replays;
// it is cancelled if the function's run ends first.
//
//	bill, err := sdk.Invoke[Invoice](fc, "bill", sdk.Call{Workflow: "billing", Input: order})
func Invoke[T any](fc *Durable, name string, call Call) (T, error) {
	var zero T
	input, err := toJSON(call.Input)
	if err != nil {
		return zero, Fatal(fmt.Errorf("encoding the input of invoke %q: %w", name, err))
	}
	fc.mu.Lock()
	id, recs, err := fc.begin(name, cairn.OpInvoke)
	if err == nil && len(recs) == 0 {
		fc.record(client.Operation{Id: id, Kind: string(cairn.OpInvoke), Status: string(cairn.OpStarted)})
	}
	fc.mu.Unlock()
	switch last := lastOutcome(recs); {
	case err != nil:
		return zero, err
	case last != nil && last.Status == string(cairn.OpFailed):
		return zero, opError(last.Error)
	case last != nil:
		raw, err := fc.resolve(last.Result)
		if err != nil {
			return zero, err
		}
		var v T
		if err := decodeInput(raw, &v); err != nil {
			return zero, Fatal(fmt.Errorf("decoding the output of the run invoke %q started into %T: %w", id, v, err))
		}
		return v, nil
	}
	inv := &client.Invocation{Workflow: call.Workflow, Input: input}
	if call.Version != "" {
		inv.Version = &call.Version
	}
	return zero, fc.suspend(&client.Suspension{Op: &id, Invoke: inv})
}

// resolve reads a recorded result stored by reference (one too large for
// the run record: a step's result, an event's payload, an invoked run's
// output), through the lease.
func (fc *Durable) resolve(raw json.RawMessage) (json.RawMessage, error) {
	if fc.sc.payload == nil || !isRef(raw) {
		return raw, nil
	}
	b, err := fc.sc.payload(fc, raw)
	if err != nil {
		return nil, Retryable(fmt.Errorf("reading a recorded result stored by reference: %w", err))
	}
	return fc.sc.openStored(b) // codec.go
}

// lastOutcome is the outcome among an operation's records (completed or
// failed), or nil when it has only started.
func lastOutcome(recs []client.Operation) *client.Operation {
	if n := len(recs); n > 0 && recs[n-1].Status != string(cairn.OpStarted) {
		return &recs[n-1]
	}
	return nil
}
