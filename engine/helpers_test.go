package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/blob/sim"
	"github.com/cairn-dev/cairn/internal/testutil"
)

// clock is a settable clock for tests that need leases to expire: time
// that moves only when told to.
type clock = sim.ManualClock

func newClock() *clock { return clockAt(time.Now().UTC()) }

// clockAt is a clock stopped at t.
func clockAt(t time.Time) *clock { return sim.NewManualClock(t) }

// runningClock is the wall clock plus an offset that Advance moves
// forward: for tests where engine time must pass on its own (fallback
// scans, throttles) and also jump, e.g. past a timer bucket, without
// sleeping through it.
type runningClock struct{ off atomic.Int64 }

func (c *runningClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

func (c *runningClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

func mustStart(t testing.TB, e *Engine, wf string, input string) string {
	t.Helper()
	req := cairn.StartRequest{Workflow: wf}
	if input != "" {
		req.Input = json.RawMessage(input)
	}
	res, err := e.StartRun(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Run.ID
}

func claimOne(t testing.TB, e *Engine, worker string) cairn.Lease {
	t.Helper()
	ls, err := e.Claim(context.Background(), cairn.ClaimRequest{WorkerID: worker, Max: 1, WaitMs: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 {
		t.Fatalf("claim by %s got %d leases, want 1", worker, len(ls))
	}
	return ls[0]
}

func wantReason(t testing.TB, err error, reason cairn.Reason) {
	t.Helper()
	got, ok := IsRejection(err)
	if !ok || got != reason {
		t.Fatalf("got %v, want a %s rejection", err, reason)
	}
}

// runWaitBound is how long awaitRun waits for a run's state: far more
// than any test's run needs on a loaded machine with a real store, so
// reaching it means the run is stuck, which the failure then describes.
const runWaitBound = time.Minute

// awaitRun waits until pred holds for run id (what names the state, for
// the failure) and returns the run as pred saw it. It waits on the
// engine's own long poll (the record GetRunStatus answers from, after the
// last revision seen, so it is woken by the next change), looking again
// at least every half second for a state that is not a change of the
// record (a backoff that ends). pred sees the run as GetRun shows it but
// without its holders (reading them costs a read per held step, per
// change). At runWaitBound, or when the run ends without pred holding, it
// fails the test with a diagnosis of the run (diagnoseRun). Call it from
// the test's goroutine.
func awaitRun(t testing.TB, e *Engine, id, what string, pred func(*cairn.Run) bool) *cairn.Run {
	t.Helper()
	r, diag := waitRun(t, e, id, time.Now().Add(runWaitBound), pred)
	if diag != "" {
		t.Fatalf("run %s not %s within %v: %s", id, what, runWaitBound, diag)
	}
	return r
}

// awaitEnded is awaitRun for the end of the run, whatever its status.
func awaitEnded(t testing.TB, e *Engine, id string) *cairn.Run {
	t.Helper()
	return awaitRun(t, e, id, "ended", func(r *cairn.Run) bool { return r.Status.Terminal() })
}

// waitRun is awaitRun without the failure: it returns the run once pred
// holds, or a diagnosis ("" when pred held) when the run ended without it
// or deadline passed.
func waitRun(t testing.TB, e *Engine, id string, deadline time.Time, pred func(*cairn.Run) bool) (*cairn.Run, string) {
	t.Helper()
	ctx := context.Background()
	var rev int64
	hold := time.Duration(0) // the first look answers at once
	for {
		rec, err := e.watchRun(ctx, id, rev, false, hold)
		if err != nil {
			return nil, fmt.Sprintf("status: %v\n%s", err, diagnoseRun(t, e, id))
		}
		rev = rec.Rev
		d, err := e.definition(ctx, rec.Workflow, rec.Version)
		if err != nil {
			d = nil // the view works without it, as GetRun's does
		}
		r := e.view(rec, d)
		if pred(r) {
			return r, ""
		}
		if r.Status.Terminal() {
			return r, fmt.Sprintf("the run ended %s without it:\n%s", r.Status, diagnoseRun(t, e, id))
		}
		left := time.Until(deadline)
		if left <= 0 {
			return r, "not so by the bound:\n" + diagnoseRun(t, e, id)
		}
		hold = min(left, 500*time.Millisecond)
	}
}

// awaitWatched waits until a status request waits on run on e (one
// registered with e.watch): a change committed from then on wakes it. The
// registry signals nothing, so this polls it, every millisecond (a
// request registers within microseconds of being sent), up to 10 s.
func awaitWatched(t testing.TB, e *Engine, run string) {
	t.Helper()
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "a status request waiting on run "+run, func() (bool, string) {
		n := e.watch.Waiting(run)
		return n > 0, fmt.Sprintf("%d requests waiting", n)
	})
}

// awaitCompleted waits until every run of ids is completed; at within, or
// when a run ends otherwise, it returns a diagnosis of each run that is not
// (diagnoseRun), which the caller fails the test with once its goroutines
// stopped: a wait that ends silently reports a symptom later, not the
// stuck step. "" means every run completed.
// It waits on each run in turn through waitRun (the engine's long poll).
func awaitCompleted(t testing.TB, e *Engine, ids []string, within time.Duration) (diagnosis string) {
	t.Helper()
	deadline := time.Now().Add(within)
	completed := func(r *cairn.Run) bool { return r.Status == cairn.RunCompleted }
	for i, id := range ids {
		r, diag := waitRun(t, e, id, deadline, completed)
		switch {
		case diag == "":
			continue
		case r != nil && r.Status.Terminal():
			return fmt.Sprintf("run %s, want completed: %s", id, diag)
		}
		var left []string
		for _, id := range ids[i:] {
			if rec, err := e.readRun(context.Background(), id); err != nil || rec.Status != cairn.RunCompleted {
				left = append(left, id)
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d of %d runs not completed after %v:\n", len(left), len(ids), within)
		for i, id := range left {
			if i == 5 {
				fmt.Fprintf(&b, "… and %d more\n", len(left)-5)
				break
			}
			b.WriteString(diagnoseRun(t, e, id))
		}
		return b.String()
	}
	return ""
}

// diagnoseRun describes why a run may be stuck: its status, each step that
// is not done with its attempt and that attempt's lease (or its absence),
// the run's timers in the index, and the last journal entries.
func diagnoseRun(t testing.TB, e *Engine, id string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	r, err := e.GetRun(ctx, id)
	if err != nil {
		return fmt.Sprintf("run %s: %v\n", id, err)
	}
	rec, _ := e.readRun(ctx, id)
	rev := int64(-1)
	if rec != nil {
		rev = rec.Rev
	}
	fmt.Fprintf(&b, "run %s (%s@%s): %s, rev %d\n", id, r.Workflow, r.Version, r.Status, rev)
	for _, s := range r.Steps {
		if s.Status == cairn.StepCompleted || s.Status == cairn.StepSkipped {
			continue
		}
		fmt.Fprintf(&b, "  step %s: %s, attempt %d", s.ID, s.Status, s.Attempt)
		if s.ReadyAt != nil {
			fmt.Fprintf(&b, ", ready at %s", s.ReadyAt.Format("15:04:05.000"))
		}
		if s.Map != nil {
			fmt.Fprintf(&b, ", map %+v", *s.Map)
		}
		if s.Status == cairn.StepReady && s.Attempt > 0 && rec != nil {
			o, err := e.store.Get(ctx, e.keys.LeaseOf(rec.Layout, rec.ID, s.ID, s.Attempt))
			switch {
			case isNotFound(err):
				b.WriteString(", no lease (unclaimed)")
			case err != nil:
				fmt.Fprintf(&b, ", lease unreadable: %v", err)
			default:
				fmt.Fprintf(&b, ", lease %s", o.Data)
			}
		}
		b.WriteString("\n")
	}
	if ts, err := e.store.ListAll(ctx, e.keys.TimersPrefix()); err == nil {
		n := 0
		for _, a := range ts {
			if strings.Contains(a.Key, id) {
				fmt.Fprintf(&b, "  timer %s\n", a.Key)
				n++
			}
		}
		if n == 0 {
			b.WriteString("  no timer in the index\n")
		}
	}
	if j, err := e.Journal(ctx, id); err == nil {
		from := max(0, len(j)-15)
		for _, x := range j[from:] {
			fmt.Fprintf(&b, "  %s %s %s #%d %s %s\n", x.At.Format("15:04:05.000"), x.Type, x.Step, x.Attempt, x.Worker, x.Message)
		}
	}
	return b.String()
}

func getRun(t testing.TB, e *Engine, id string) *cairn.Run {
	t.Helper()
	r, err := e.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Steps {
		for _, a := range s.Attempts {
			if a.Outcome != "" && !slices.Contains(a.Outcome.Values(), a.Outcome) {
				t.Fatalf("step %s attempt %d: outcome %q is not in the vocabulary", s.ID, a.N, a.Outcome)
			}
		}
	}
	return r
}

func stepOf(r *cairn.Run, id string) cairn.StepView {
	for _, s := range r.Steps {
		if s.ID == id {
			return s
		}
	}
	return cairn.StepView{}
}

func countJournal(t testing.TB, e *Engine, run string, typ cairn.JournalType, step string) int {
	t.Helper()
	j, err := e.Journal(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range j {
		if !slices.Contains(x.Type.Values(), x.Type) {
			t.Fatalf("journal type %q is not in the vocabulary", x.Type)
		}
		if x.Type == typ && (step == "" || x.Step == step) {
			n++
		}
	}
	return n
}

func single(name string, s cairn.Step) cairn.Workflow {
	if s.ID == "" {
		s.ID = "only"
	}
	return cairn.Workflow{Name: name, Version: "1", Steps: []cairn.Step{s}}
}

func isNotFoundAPI(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// harness is what an engine test starts from: a context, a clock that
// moves only when told (the engine's Config.Now unless the test asks for
// the wall clock or its config sets its own), a store (a fresh mem store
// unless given) and an engine on them, closed when the test ends.
type harness struct {
	t      testing.TB
	ctx    context.Context
	clk    *clock
	store  *blob.Bucket
	cfg    Config // as the engine got it
	e      *Engine
	counts *counting.Counts // the engine's requests, with counted
	faults *faults.Store    // the store's fault injector, with withFaults
	base   *blob.Bucket     // the store under the counting (store without counted)
}

type harnessOption func(*harnessSetup)

type harnessSetup struct {
	clk   *clock
	store *blob.Bucket
	cfg   Config
	wall  bool
	count bool
	fault *faults.Profile
	reg   []func(h *harness)
}

// onStore puts the harness's engine on store.
func onStore(store *blob.Bucket) harnessOption {
	return func(s *harnessSetup) { s.store = store }
}

// withClock makes the harness's clock with newClk instead of newClock
// (each harness its own: eachStore's subtests do not share one).
func withClock(newClk func() *clock) harnessOption {
	return func(s *harnessSetup) { s.clk = newClk() }
}

// withConfig is the engine's configuration (its Now, when unset, is the
// harness's clock).
func withConfig(cfg Config) harnessOption {
	return func(s *harnessSetup) { s.cfg = cfg }
}

// counted counts the requests the harness's engine makes to its store
// (h.counts); h.store is then the counting store.
func counted() harnessOption {
	return func(s *harnessSetup) { s.count = true }
}

// withFaults puts the harness's store behind a fault injector that fails
// requests as p says and as h.faults is told; h.store is then the faulty
// store (counted with counted, h.base not).
func withFaults(p faults.Profile) harnessOption {
	return func(s *harnessSetup) { s.fault = &p }
}

// wallClock leaves the engine on the wall clock, as Config{} does.
func wallClock() harnessOption {
	return func(s *harnessSetup) { s.wall = true }
}

// withWorkflows registers wfs for worker on the harness's engine.
func withWorkflows(worker string, wfs ...cairn.Workflow) harnessOption {
	return func(s *harnessSetup) {
		s.reg = append(s.reg, func(h *harness) { register(h.t, h.e, worker, wfs...) })
	}
}

// newHarness is a test's harness, made as opts say.
func newHarness(t testing.TB, opts ...harnessOption) *harness {
	t.Helper()
	var s harnessSetup
	for _, o := range opts {
		o(&s)
	}
	h := &harness{t: t, ctx: context.Background(), clk: s.clk, store: s.store}
	if h.clk == nil {
		h.clk = newClock()
	}
	if h.store == nil {
		h.store = mem.New()
	}
	if s.fault != nil {
		h.store, h.faults = faults.Wrap(h.store, *s.fault)
	}
	h.base = h.store
	if s.count {
		h.store, h.counts = counting.Wrap(h.store)
	}
	if s.cfg.Now == nil && !s.wall {
		s.cfg.Now = h.clk.Now
	}
	h.cfg = s.cfg
	h.e = newTestEngine(t, h.store, h.cfg)
	for _, r := range s.reg {
		r(h)
	}
	return h
}

// eachStore runs test as a subtest on each store engine tests run on
// (stores), with a harness on it made with opts.
func eachStore(t *testing.T, test func(t *testing.T, h *harness), opts ...harnessOption) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			test(t, newHarness(t, append([]harnessOption{onStore(open(t))}, opts...)...))
		})
	}
}

// peer is another instance on the harness's store, with its config (its
// requests counted with the harness's engine's, with counted).
func (h *harness) peer() *Engine {
	h.t.Helper()
	return newTestEngine(h.t, h.store, h.cfg)
}

// uncountedPeer is a peer whose requests are not counted.
func (h *harness) uncountedPeer() *Engine {
	h.t.Helper()
	return newTestEngine(h.t, h.base, h.cfg)
}

// countedPeer is a peer whose requests are counted apart, in counts.
func (h *harness) countedPeer() (e *Engine, counts *counting.Counts) {
	h.t.Helper()
	store, counts := counting.Wrap(h.base)
	return newTestEngine(h.t, store, h.cfg), counts
}

// start starts a run of wf with input (none when "") and returns its id.
func (h *harness) start(wf, input string) string {
	h.t.Helper()
	return mustStart(h.t, h.e, wf, input)
}

// claim claims one lease for worker, which must get exactly one.
func (h *harness) claim(worker string) cairn.Lease {
	h.t.Helper()
	return claimOne(h.t, h.e, worker)
}

// run is the run's view (getRun).
func (h *harness) run(id string) *cairn.Run {
	h.t.Helper()
	return getRun(h.t, h.e, id)
}

// reap runs one reaper pass, which must not fail.
func (h *harness) reap() ReapStats {
	h.t.Helper()
	st, err := h.e.Reap(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// started marks lease id started on the harness's engine, which must accept it.
func (h *harness) started(id string) {
	h.t.Helper()
	if _, err := h.e.Started(h.ctx, id); err != nil {
		h.t.Fatal(err)
	}
}

// complete completes lease id on the harness's engine with output (none
// when ""), which must be accepted.
func (h *harness) complete(id, output string) {
	h.t.Helper()
	req := cairn.CompleteRequest{}
	if output != "" {
		req.Output = json.RawMessage(output)
	}
	if _, err := h.e.Complete(h.ctx, id, req); err != nil {
		h.t.Fatal(err)
	}
}

// startStarted starts a run of wf with input and has worker claim its
// first step and report it started: a run whose step is being worked on.
func (h *harness) startStarted(wf, input, worker string) (run string, l cairn.Lease) {
	h.t.Helper()
	run = h.start(wf, input)
	l = h.claim(worker)
	h.started(l.ID)
	return run, l
}

// instances is the harness's engine and n-1 peers: n instances on one
// store with one config (and so one bus, when it has one).
func (h *harness) instances(n int) []*Engine {
	h.t.Helper()
	es := []*Engine{h.e}
	for len(es) < n {
		es = append(es, h.peer())
	}
	return es
}

// warmUp pays e's once-per-instance costs before a test counts its
// requests: the first claim's fallback scan and worker's sighting (a claim
// for worker that waits for nothing), settled.
func warmUp(t testing.TB, e *Engine, worker string) {
	t.Helper()
	if _, err := e.Claim(context.Background(), cairn.ClaimRequest{WorkerID: worker}); err != nil {
		t.Fatal(err)
	}
	e.Settle()
}
