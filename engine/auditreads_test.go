package engine

import (
	"bytes"
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
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/engine/internal/audit"
	"github.com/cairn-dev/cairn/internal/testutil"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

// auditEntries decodes every audit object of e's store: its entries (JSON
// lines), and how many objects hold them.
func auditEntries(t testing.TB, e *Engine) (entries []audit.Entry, objects int) {
	t.Helper()
	objs, err := e.store.ListAll(context.Background(), e.keys.Prefix+"audit/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		got, err := e.store.Get(context.Background(), o.Key)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasSuffix(got.Data, []byte("\n")) || len(got.Data) == 0 {
			t.Fatalf("audit object %s: %q, want JSON lines without a trailing newline", o.Key, got.Data)
		}
		for _, line := range bytes.Split(got.Data, []byte("\n")) {
			var en audit.Entry
			if err := json.Unmarshal(line, &en); err != nil || en.At.IsZero() || en.Run == "" || en.Who == "" || en.Operation == "" {
				t.Fatalf("audit object %s: line %q: %v", o.Key, line, err)
			}
			if !strings.Contains(o.Key, "/"+en.At.UTC().Format(time.DateOnly)+"/") {
				t.Fatalf("audit object %s holds an entry of %v: not its date", o.Key, en.At)
			}
			entries = append(entries, en)
		}
	}
	return entries, len(objs)
}

// awaitHeld waits until n reads are held for run's end on e, each
// registered in the audit log and waiting on the run.
func awaitHeld(t testing.TB, e *Engine, run string, n int) {
	t.Helper()
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, fmt.Sprintf("%d reads held on run %s", n, run), func() (bool, string) {
		held, waiting := e.audit.Held(), e.watch.Waiting(run)
		return held >= n && waiting >= n, fmt.Sprintf("%d held, %d waiting", held, waiting)
	})
}

type awaited struct {
	who      string
	r        *cairn.Run
	recorded bool
	err      error
}

// awaitAll holds n reads of run on e (who "u0".."u<n-1>") until it ends,
// held for wait, and returns their answers once all answered.
func awaitAll(t testing.TB, e *Engine, run string, n int, wait time.Duration) func() []awaited {
	out := make(chan awaited, n)
	for i := range n {
		go func() {
			who := fmt.Sprintf("u%d", i)
			r, rec, err := e.AwaitRun(context.Background(), run, wait, who, "getRun")
			out <- awaited{who, r, rec, err}
		}()
	}
	return func() []awaited {
		var got []awaited
		for range n {
			got = append(got, <-out)
		}
		return got
	}
}

// TestHeldReadRecordedInEndingCommit: reads held for a run's end on the
// instance whose commit ends it are recorded in that commit's record, at
// most audit.MaxCopied of them (the rest audit themselves, as the
// caller does when recorded is false): no audit object is written, and
// the record holds who read, with which operation. A hold that ended
// before the run did is not recorded.
func TestHeldReadRecordedInEndingCommit(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("one", cairn.Step{})))
	ctx, e := h.ctx, h.e
	run := h.start("one", `{}`)
	// A hold that ends first answers the running run, unrecorded.
	if r, rec, err := e.AwaitRun(ctx, run, 50*time.Millisecond, "early", "getRun"); err != nil || rec || r.Status != cairn.RunRunning {
		t.Fatalf("hold that ended first: %v %v %v", r, rec, err)
	}
	const n = audit.MaxCopied + 4
	answers := awaitAll(t, e, run, n, 20*time.Second)
	awaitHeld(t, e, run, n)
	h.complete(h.claim("w").ID, `"o"`)
	got := answers()
	recorded := map[string]bool{}
	for _, a := range got {
		if a.err != nil || a.r.Status != cairn.RunCompleted {
			t.Fatalf("%s: %+v %v", a.who, a.r, a.err)
		}
		if a.recorded {
			recorded[a.who] = true
		}
	}
	if len(recorded) != audit.MaxCopied {
		t.Fatalf("%d of %d held reads recorded in the ending commit, want %d", len(recorded), n, audit.MaxCopied)
	}
	rr, err := e.readRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	inRecord := map[string]int{}
	for _, en := range rr.Reads {
		if en.Operation != "getRun" || en.At.IsZero() || en.Run != "" {
			t.Fatalf("record entry %+v", en)
		}
		inRecord[en.Who]++
	}
	for who := range recorded {
		if inRecord[who] != 1 {
			t.Fatalf("%s answered as recorded, the record holds it %d times: %+v", who, inRecord[who], rr.Reads)
		}
	}
	if len(rr.Reads) != len(recorded) || inRecord["early"] != 0 {
		t.Fatalf("record reads %+v, want exactly the %d recorded ones", rr.Reads, len(recorded))
	}
	if entries, objects := auditEntries(t, e); objects != 0 {
		t.Fatalf("%d audit objects (%+v) for reads recorded in the run's record", objects, entries)
	}
	if held := e.audit.Held(); held != 0 {
		t.Fatalf("%d reads still held after every AwaitRun returned", held)
	}
}

// TestHeldReadOnAnotherInstanceAuditsItself: a read held on B for a run
// that A ends is not recorded by A's commit (nor by B: it wrote
// nothing), so it is not reported recorded and the caller audits it.
func TestHeldReadOnAnotherInstanceAuditsItself(t *testing.T) {
	h := newHarness(t, wallClock(), withConfig(Config{Bus: notifymem.New(), FallbackInterval: 5 * time.Second}), withWorkflows("w", single("one", cairn.Step{})))
	a, b := h.e, h.peer()
	run := h.start("one", `{}`)
	answers := awaitAll(t, b, run, 3, 20*time.Second)
	awaitHeld(t, b, run, 3)
	h.complete(claimOne(t, a, "w").ID, `"o"`)
	for _, got := range answers() {
		if got.err != nil || got.r.Status != cairn.RunCompleted || got.recorded {
			t.Fatalf("%s on B: %+v recorded %v, %v", got.who, got.r, got.recorded, got.err)
		}
		if err := b.Audit(h.ctx, got.who, "getRun", run); err != nil { // what the API does
			t.Fatal(err)
		}
	}
	rr, err := a.readRun(h.ctx, run)
	if err != nil || len(rr.Reads) != 0 {
		t.Fatalf("record reads %+v, %v: B's reads are not A's to record", rr.Reads, err)
	}
	if entries, _ := auditEntries(t, a); len(entries) != 3 {
		t.Fatalf("audit entries %+v, want B's 3", entries)
	}
}

// TestAuditGroupsConcurrentReads: 64 concurrent audited reads on one
// instance share writes: every entry is in exactly one audit object,
// and there are far fewer objects than reads. A write that fails fails
// the reads it held, and only those: their entries are in no object.
func TestAuditGroupsConcurrentReads(t *testing.T) {
	h := newHarness(t, wallClock(), withFaults(faults.Profile{Write: faults.Latency{P50: 5 * time.Millisecond, P99: 10 * time.Millisecond}}))
	e := h.e
	const n = 64
	readAll := func() map[string]error {
		var mu sync.Mutex
		errs := map[string]error{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				who := fmt.Sprintf("r%d", i)
				err := e.Audit(h.ctx, who, "getRun", "run-"+who)
				mu.Lock()
				errs[who] = err
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		return errs
	}
	for who, err := range readAll() {
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
	}
	entries, objects := auditEntries(t, e)
	seen := map[string]int{}
	for _, en := range entries {
		if en.Run != "run-"+en.Who || en.Operation != "getRun" {
			t.Fatalf("entry %+v", en)
		}
		seen[en.Who]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("r%d", i)]; c != 1 {
			t.Fatalf("r%d's entry written %d times, want once", i, c)
		}
	}
	if objects > n/4 {
		t.Fatalf("%d audit objects for %d concurrent reads: not grouped", objects, n)
	}
	t.Logf("%d concurrent reads in %d audit objects", n, objects)

	// Now one write fails.
	for _, o := range allKeys(t, e.store, "audit/") {
		if err := e.store.Delete(h.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	h.faults.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "audit/", Times: 1})
	errs := readAll()
	entries, _ = auditEntries(t, e)
	seen = map[string]int{}
	for _, en := range entries {
		seen[en.Who]++
	}
	failed := 0
	for who, err := range errs {
		switch {
		case err != nil && !errors.Is(err, faults.ErrInjected):
			t.Fatalf("%s: %v, want the injected fault", who, err)
		case err != nil:
			failed++
			if seen[who] != 0 {
				t.Fatalf("%s failed but its entry is in the audit log", who)
			}
		case seen[who] != 1:
			t.Fatalf("%s succeeded, its entry written %d times", who, seen[who])
		}
	}
	if failed == 0 {
		t.Fatal("no read failed with its write")
	}
}

// TestPurgeKeepsReads: deleting an ended run writes the reads its record
// holds to the audit log first, as entries of the run; a purge whose
// audit write fails leaves the run for the next pass (the reaper's
// retention, and DeleteRun).
func TestPurgeKeepsReads(t *testing.T) {
	h := newHarness(t, withConfig(Config{Retention: time.Hour}), withClock(schedClock), withFaults(faults.Profile{}), withWorkflows("w", single("one", cairn.Step{})))
	ctx, e := h.ctx, h.e
	var runs []string
	for range 3 {
		run := h.start("one", `{}`)
		answers := awaitAll(t, e, run, 2, 20*time.Second)
		awaitHeld(t, e, run, 2)
		h.complete(h.claim("w").ID, "")
		for _, a := range answers() {
			if !a.recorded {
				t.Fatalf("%s not recorded", a.who)
			}
		}
		runs = append(runs, run)
	}
	if _, objects := auditEntries(t, e); objects != 0 {
		t.Fatalf("%d audit objects before any purge", objects)
	}
	h.clk.Advance(2 * time.Hour)
	h.faults.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "audit/"})
	if err := e.DeleteRun(ctx, runs[0], false); err == nil {
		t.Fatal("DeleteRun succeeded while the audit log refused its reads")
	}
	if st, _ := e.Reap(ctx); st.RunsDeleted != 0 {
		t.Fatalf("a pass deleted %d runs while the audit log refused their reads", st.RunsDeleted)
	}
	for _, run := range runs {
		if rr, err := e.readRun(ctx, run); err != nil || len(rr.Reads) != 2 {
			t.Fatalf("run %s after failed purges: %v, %v", run, rr, err)
		}
	}
	h.faults.Clear()
	if err := e.DeleteRun(ctx, runs[0], false); err != nil {
		t.Fatal(err)
	}
	if st := mustReap(t, e); st.RunsDeleted != 2 {
		t.Fatalf("pass deleted %d runs, want 2", st.RunsDeleted)
	}
	entries, _ := auditEntries(t, e)
	seen := map[string]int{}
	for _, en := range entries {
		seen[en.Run+"/"+en.Who]++
	}
	for _, run := range runs {
		if _, err := e.GetRun(ctx, run); !isNotFoundAPI(err) {
			t.Fatalf("run %s: %v, want deleted", run, err)
		}
		for _, who := range []string{"u0", "u1"} {
			if seen[run+"/"+who] != 1 {
				t.Fatalf("read of %s by %s in the audit log %d times, want once: %+v", run, who, seen[run+"/"+who], entries)
			}
		}
	}
}

// TestHeldReadMarkedOnlyByTheWriteThatLands: the ending commit's first
// swap loses (a concurrent write): the reads it copied are not marked,
// and the retry, which lands, copies and marks them: each is in the
// landed record once and answered as recorded at its revision.
func TestHeldReadMarkedOnlyByTheWriteThatLands(t *testing.T) {
	h := newHarness(t, wallClock(), withFaults(faults.Profile{}), withWorkflows("w", single("one", cairn.Step{})))
	ctx, e := h.ctx, h.e
	run := h.start("one", `{}`)
	l := h.claim("w")
	answers := awaitAll(t, e, run, 3, 20*time.Second)
	awaitHeld(t, e, run, 3)
	h.faults.Inject(faults.Rule{Ops: []faults.Op{faults.OpSwap}, KeyPrefix: e.keys.RunsPrefix(), Err: blob.ErrPreconditionFailed, Times: 1})
	h.complete(l.ID, "")
	if n := h.faults.Stats().Injected; n != 1 {
		t.Fatalf("%d swaps lost, want the ending commit's first", n)
	}
	rr, err := e.readRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	inRecord := map[string]int{}
	for _, en := range rr.Reads {
		inRecord[en.Who]++
	}
	for _, a := range answers() {
		if a.err != nil || !a.recorded || a.r.Status != cairn.RunCompleted {
			t.Fatalf("%s: %+v recorded %v, %v", a.who, a.r, a.recorded, a.err)
		}
		if inRecord[a.who] != 1 {
			t.Fatalf("%s answered as recorded; the landed record holds it %d times: %+v", a.who, inRecord[a.who], rr.Reads)
		}
	}
	if len(rr.Reads) != 3 {
		t.Fatalf("record reads %+v, want 3", rr.Reads)
	}
}
