package chaos

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
)

// t0 is the synthetic rounds' origin.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func je(ms int, typ cairn.JournalType, step string, n int) cairn.JournalEntry {
	return cairn.JournalEntry{At: at(ms), Type: typ, Step: step, Attempt: n}
}

// linearRun is a run of three steps, each ready when the previous one
// completes; waits are each step's ready-to-claimed time.
func linearRun(id string, start int, waits ...int) runJournal {
	j := runJournal{ID: id, Entries: []cairn.JournalEntry{je(start, cairn.JournalRunStarted, "", 0)}}
	t := start
	for i, w := range waits {
		step := string(rune('a' + i))
		j.Entries = append(j.Entries, je(t, cairn.JournalStepReady, step, 1))
		t += w
		// As the engine writes it: the claim is journalled when the
		// attempt ends, dated at the claim.
		j.Entries = append(j.Entries, je(t+30, cairn.JournalStepCompleted, step, 1), je(t, cairn.JournalStepClaimed, step, 1))
		t += 30
	}
	return runJournal{ID: id, Entries: append(j.Entries, je(t, cairn.JournalRunCompleted, "", 0))}
}

var testParams = liveParams{LeaseTTL: 2 * time.Second, Reaper: 250 * time.Millisecond, Fallback: 500 * time.Millisecond,
	AnnounceAfter: 5 * time.Second, ActiveCheck: 2 * time.Second, Slack: 5 * time.Second, Workload: 2 * time.Second}

// TestLivenessWaits: each attempt's wait runs from its step_ready (or its
// retry's time, when later) to its step_claimed, or to the claim the
// history shows when the journal has none (an attempt cut by the run's
// end), or to the run's end when no claim was seen (counted as not
// leased); time no worker could claim is not counted.
func TestLivenessWaits(t *testing.T) {
	retry := cairn.JournalEntry{At: at(100), Type: cairn.JournalStepRetryScheduled, Step: "flaky", Attempt: 1,
		Message: "retry at " + at(300).Format(time.RFC3339Nano)}
	runs := []runJournal{
		linearRun("lin", 0, 100, 50, 1000),
		{ID: "flaky", Entries: []cairn.JournalEntry{
			je(0, cairn.JournalRunStarted, "", 0),
			je(0, cairn.JournalStepReady, "flaky", 1), je(20, cairn.JournalStepClaimed, "flaky", 1),
			retry, je(100, cairn.JournalStepReady, "flaky", 2), // claimable at 300
			je(400, cairn.JournalStepCompleted, "flaky", 2), je(350, cairn.JournalStepClaimed, "flaky", 2),
			je(400, cairn.JournalRunCompleted, "", 0),
		}},
		{ID: "cut", Entries: []cairn.JournalEntry{ // claimed, then cancelled: the history has the claim
			je(0, cairn.JournalRunStarted, "", 0), je(0, cairn.JournalStepReady, "slow", 1), je(900, cairn.JournalRunCancelled, "", 0),
		}},
		{ID: "unclaimed", Entries: []cairn.JournalEntry{ // cancelled before any claim
			je(0, cairn.JournalRunStarted, "", 0), je(0, cairn.JournalStepReady, "slow", 1), je(700, cairn.JournalRunCancelled, "", 0),
		}},
		// Ready at 2 s, leased at 12 s; no worker could claim from 3 s to
		// 11 s: 2 s counted.
		linearRun("outage", 2000, 10_000),
	}
	claimResp, _ := json.Marshal(map[string]any{"leases": []map[string]any{
		{"run": "cut", "step": "slow", "attempt": 1, "expires_at": at(80 + 2000), "lease_ttl_ms": 2000},
	}})
	claims := historyClaims([]Call{
		{Worker: "w", Path: "/steps/claim", Status: 200, Resp: claimResp},
		{Worker: "w", Path: "/steps/claim", Pending: true},
	})
	spans := []span{{at(-1000), at(3000)}, {at(11_000), forever}}
	got := map[string]Sample{}
	for _, s := range attemptSamples(runs, claims, spans, nil, nil) {
		got[s.Run+"/"+s.Step+"/"+string(rune('0'+s.Attempt))] = s
	}
	want := map[string]struct {
		wait, raw time.Duration
		notLeased bool
	}{
		"lin/a/1":          {100 * time.Millisecond, 100 * time.Millisecond, false},
		"lin/b/1":          {50 * time.Millisecond, 50 * time.Millisecond, false},
		"lin/c/1":          {time.Second, time.Second, false},
		"flaky/flaky/1":    {20 * time.Millisecond, 20 * time.Millisecond, false},
		"flaky/flaky/2":    {50 * time.Millisecond, 50 * time.Millisecond, false},
		"cut/slow/1":       {80 * time.Millisecond, 80 * time.Millisecond, false},
		"unclaimed/slow/1": {700 * time.Millisecond, 700 * time.Millisecond, true},
		"outage/a/1":       {2 * time.Second, 10 * time.Second, false},
	}
	if len(got) != len(want) {
		t.Errorf("got %d samples, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		s, ok := got[k]
		if !ok {
			t.Errorf("no sample %s", k)
			continue
		}
		if s.Idle != w.wait || s.Raw != w.raw || s.Free != w.raw || s.NotLeased != w.notLeased {
			t.Errorf("%s: idle %v raw %v free %v not leased %v, want %v %v %v %v", k, s.Idle, s.Raw, s.Free, s.NotLeased, w.wait, w.raw, w.raw, w.notLeased)
		}
	}
}

// TestClaimable: time counts while some worker waits in a claim the
// engine answers with no lease, at an API instance that is up, with the
// store up; a claim answered with work is no wait.
func TestClaimable(t *testing.T) {
	claim := func(worker string, from, to, max, got int) Call {
		req, _ := json.Marshal(map[string]int{"max": max})
		leases := make([]map[string]any, got)
		for i := range leases {
			leases[i] = map[string]any{"run": "r", "step": "s", "attempt": 1}
		}
		resp, _ := json.Marshal(map[string]any{"leases": leases})
		return Call{Worker: worker, Path: "/steps/claim", Status: 200, Req: req, Resp: resp,
			Start: at(from).UnixNano(), End: at(to).UnixNano()}
	}
	workerAPI := map[string]string{"worker0": "api0", "worker1": "api1", "tsworker0": "api1"}
	calls := []Call{
		claim("worker0-g0", 0, 1500, 8, 0),    // waited, got none
		claim("worker1-g2", 500, 2500, 4, 0),  // waited, got none (api1 down at 2000)
		claim("worker0-g1", 3000, 6000, 8, 0), // store down 4000–5000
		claim("worker1-g2", 2500, 3000, 1, 1), // got work: not idle
		claim("worker0-g1", 2000, 2900, 8, 1), // got one of eight: not counted either
		claim("worker9-g0", 2000, 3000, 8, 0), // no such worker
		// Killed mid-claim; a claim with no answer.
		{Worker: "tsworker0-g0", Path: "/steps/claim", Pending: true, Start: at(2000).UnixNano()},
		{Worker: "tsworker0-g0", Path: "/steps/claim", Start: at(2000).UnixNano(), End: at(2900).UnixNano()},
	}
	claims := freeClaims(calls, workerAPI)
	if len(claims) != 4 {
		t.Fatalf("claims with free slots %v, want 4", claims)
	}
	ev := []procEvent{
		{at(0), "store", true}, {at(0), "api0", true}, {at(0), "api1", true},
		{at(2000), "api1", false},
		{at(4000), "store", false},
		{at(5000), "store", true},
	}
	spans := claimable(ev, claims, "store", true)
	want := []span{{at(0), at(2000)}, {at(3000), at(4000)}, {at(5000), at(6000)}}
	if len(spans) != len(want) {
		t.Fatalf("spans %v, want %v", spans, want)
	}
	for i := range want {
		if !spans[i].From.Equal(want[i].From) || !spans[i].To.Equal(want[i].To) {
			t.Errorf("span %d = %v, want %v", i, spans[i], want[i])
		}
	}
	if d := covered(spans, at(1500), at(5500)); d != 2*time.Second {
		t.Errorf("covered 1.5 s..5.5 s = %v, want 2s (0.5 + 1 + 0.5)", d)
	}
	if d := covered(claimable(ev, nil, "store", false), at(0), at(1000)); d != 0 {
		t.Errorf("no worker ever waited: covered %v", d)
	}
	// With free slots: the claim that got one lease of eight counts too.
	free := claimable(ev, claims, "store", false)
	want = []span{{at(0), at(2900)}, {at(3000), at(4000)}, {at(5000), at(6000)}}
	if len(free) != len(want) {
		t.Fatalf("free-slot spans %v, want %v", free, want)
	}
	for i := range want {
		if !free[i].From.Equal(want[i].From) || !free[i].To.Equal(want[i].To) {
			t.Errorf("free-slot span %d = %v, want %v", i, free[i], want[i])
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 100 * time.Millisecond, 0.99: 198 * time.Millisecond, 1: 200 * time.Millisecond} {
		if got := percentile(ds, q); got != want {
			t.Errorf("p%v = %v, want %v", q*100, got, want)
		}
	}
	if got := percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of none = %v", got)
	}
}

// TestLivenessBounds: L1 and L3 as docs/RELIABILITY.md states them.
func TestLivenessBounds(t *testing.T) {
	// No bus: 40 active runs take ceil(40/16) = 3 scans of 500 ms.
	if d, _ := testParams.readyBound(40, false, true); d != 1500*time.Millisecond+250*time.Millisecond+5*time.Second {
		t.Errorf("L1 with no bus = %v", d)
	}
	if d, _ := testParams.readyBound(0, false, true); d != 500*time.Millisecond+250*time.Millisecond+5*time.Second {
		t.Errorf("L1 with no runs = %v", d)
	}
	// Judged by free slots: the scans a claim with free slots starts are a
	// second apart at least, so 3 of them take 3 s.
	if d, why := testParams.readyBound(40, true, true); d != 3*time.Second+250*time.Millisecond+5*time.Second || !strings.Contains(why, "scan behind") {
		t.Errorf("L1 judged by free slots = %v (%s)", d, why)
	}
	// A bus: 10 s × 3 scans, or the reaper's re-announce after 5 s at its
	// next visit (2 s): the smaller.
	bus := testParams
	bus.Bus, bus.Fallback = true, 10*time.Second
	if d, why := bus.readyBound(40, false, true); d != 7*time.Second+250*time.Millisecond+5*time.Second || !strings.Contains(why, "re-announce") {
		t.Errorf("L1 with a bus = %v (%s)", d, why)
	}
	if d, _ := bus.readyBound(10, false, true); d != 7*time.Second+250*time.Millisecond+5*time.Second {
		t.Errorf("L1 with a bus, few runs = %v", d)
	}
	// With the reaper down no hint is announced again: 10 s × 3 scans.
	if d, why := bus.readyBound(40, false, false); d != 30*time.Second+250*time.Millisecond+5*time.Second || !strings.Contains(why, "fallback") {
		t.Errorf("L1 with a bus, the reaper down = %v (%s)", d, why)
	}
	if d, _ := testParams.readyBound(40, false, false); d != 1500*time.Millisecond+250*time.Millisecond+5*time.Second {
		t.Errorf("L1 with no bus, the reaper down = %v", d)
	}
	// L3: driver 1 s + 4 s + 0.5 s + 300 attempts at 100/s (3 s) + L1 + 2 s.
	if d, _ := testParams.drainBound(time.Second, 300, 100, 6*time.Second); d != 16500*time.Millisecond {
		t.Errorf("L3 = %v", d)
	}
	if busFallback != engine.DefaultFallbackInterval {
		t.Errorf("busFallback %v is not the engine's default fallback interval %v", busFallback, engine.DefaultFallbackInterval)
	}
}

// TestLivenessVerdict: a round whose waits stay under L1 and whose drain
// stays under L3 passes; one ready attempt left 9 s while a worker could
// claim it fails, naming that run and step; a drain slower than its
// backlog allows fails.
func TestLivenessVerdict(t *testing.T) {
	chaosStart, drainStart := at(0), at(60_000)
	var runs []runJournal
	// 100 runs over the chaos minute, 3 attempts each, leased 10–200 ms
	// after ready; a few runs open at once.
	for i := range 100 {
		runs = append(runs, linearRun("r"+string(rune('A'+i%26))+string(rune('a'+i/26)), i*590, 10+i%20, 50, 200-i))
	}
	// 20 runs in the drain.
	for i := range 20 {
		runs = append(runs, linearRun("d"+string(rune('a'+i)), 60_000+i*50, 30, 30, 30))
	}
	in := liveInput{Runs: runs, ChaosStart: chaosStart, DrainStart: drainStart, Driver: 500 * time.Millisecond, Params: testParams}

	l := measureLiveness(in)
	if l.Attempts != 360 || l.NotLeased != 0 || l.Backlog != 60 {
		t.Errorf("attempts %d not leased %d backlog %d, want 360 0 60", l.Attempts, l.NotLeased, l.Backlog)
	}
	if want := (Dist{50 * time.Millisecond, 197 * time.Millisecond, 200 * time.Millisecond}); l.Idle != want || l.Free != want || l.Whole != want {
		t.Errorf("idle %v free %v whole %v, want %v", l.Idle, l.Free, l.Whole, want)
	}
	if l.Throughput != 5 { // 300 attempts in 60 s
		t.Errorf("throughput %v, want 5/s", l.Throughput)
	}
	// L1 = 500 ms × ceil(peak/16) + 250 ms + 5 s; L3 = 0.5 + 4 + 0.5 +
	// 60/5 + L1 + 2 s.
	if l.Bound != 5750*time.Millisecond || l.DrainBound != 19*time.Second+l.Bound {
		t.Errorf("L1 %v (%s) L3 %v (%s)", l.Bound, l.BoundWhy, l.DrainBound, l.DrainWhy)
	}
	if v := l.violations(10 * time.Second); len(v) != 0 {
		t.Errorf("a healthy round fails: %v", v)
	}
	t.Log("\n" + l.String())

	// The drain took longer than its backlog allows.
	if v := l.violations(l.DrainBound + time.Second); len(v) != 1 || !strings.Contains(v[0], "the drain took") {
		t.Errorf("a slow drain: %v", v)
	}

	// One attempt ready 9 s before its lease, with workers up throughout.
	stuck := linearRun("stuck-run", 30_000, 20, 9000, 20)
	in.Runs = append(in.Runs, stuck)
	l = measureLiveness(in)
	if l.Idle.Max != 9*time.Second {
		t.Errorf("max %v, want 9s", l.Idle.Max)
	}
	v := l.violations(10 * time.Second)
	if len(v) != 1 || !strings.Contains(v[0], "above the bound L1") || !strings.Contains(v[0], "run stuck-run step b attempt 1: ready 12:00:30.050") {
		t.Errorf("violations %q", v)
	}
	t.Log(v)

	// The same wait while no worker was idle for 8 of its 9 s passes,
	// unless workers had free slots meanwhile and that reading is judged.
	in.IdleSpans = []span{{at(-1000), at(31_000)}, {at(39_000), forever}}
	in.FreeSpans = []span{{at(-1000), forever}}
	l = measureLiveness(in)
	if l.Idle.Max >= l.Bound || len(l.violations(10*time.Second)) != 0 {
		t.Errorf("an excluded outage fails the round: max %v bound %v", l.Idle.Max, l.Bound)
	}
	in.Strict = true
	l = measureLiveness(in)
	if v := l.violations(10 * time.Second); len(v) != 1 || !strings.Contains(v[0], "while a worker had free slots") || !strings.Contains(v[0], "stuck-run") {
		t.Errorf("strict: violations %q", v)
	}
}

// TestLivenessReaperDown: in a round with a bus, a lost hint is announced
// again by the reaper; a wait during which the reaper was killed or
// paused is held to the fallback scans' bound instead, and one while it
// ran to the re-announce bound.
func TestLivenessReaperDown(t *testing.T) {
	events := []procEvent{
		{At: at(0), Proc: "reaper", Up: true}, {At: at(0), Proc: "api0", Up: true},
		{At: at(20_000), Proc: "reaper", Up: false}, {At: at(21_000), Proc: "api0", Up: false},
		{At: at(22_000), Proc: "api0", Up: true}, {At: at(30_000), Proc: "reaper", Up: true},
		{At: at(50_000), Proc: "reaper", Up: false},
	}
	down := downSpans(events, "reaper")
	if len(down) != 2 || down[0] != (span{at(20_000), at(30_000)}) || down[1] != (span{at(50_000), forever}) {
		t.Fatalf("down spans %v", down)
	}
	bus := testParams
	bus.Bus, bus.Fallback = true, 10*time.Second
	// One run: a 15 s wait for its step b, ready at 10 s (the reaper goes
	// down at 20 s) — under the fallback bound (10 s × 1 scan + 0.25 s +
	// 5 s slack), over the re-announce one (7.25 s + 5 s).
	in := liveInput{Runs: []runJournal{linearRun("r", 10_000, 10, 15_000, 10)}, ChaosStart: at(0), DrainStart: at(60_000), Params: bus, ReaperDown: down}
	l := measureLiveness(in)
	if l.Bound != 12250*time.Millisecond || l.NoReaperBound != 15250*time.Millisecond {
		t.Fatalf("bounds %v / %v", l.Bound, l.NoReaperBound)
	}
	if v := l.violations(time.Second); len(v) != 0 {
		t.Errorf("a wait while the reaper was down, under the fallback bound, fails: %v", v)
	}
	if !strings.Contains(l.String(), "while the reaper was down L1=15.25s") {
		t.Errorf("the report does not give the bound:\n%s", l.String())
	}
	// The same wait with the reaper up throughout is over its bound.
	in.ReaperDown = nil
	l = measureLiveness(in)
	if v := l.violations(time.Second); len(v) != 1 || !strings.Contains(v[0], "above the bound L1 = 12.25s") || !strings.Contains(v[0], "run r step b") {
		t.Errorf("a 15 s wait with the reaper up: %v", v)
	}
	// And one over the fallback bound fails with the reaper down.
	in.Runs, in.ReaperDown = []runJournal{linearRun("r", 10_000, 10, 16_000, 10)}, down
	l = measureLiveness(in)
	if v := l.violations(time.Second); len(v) != 1 || !strings.Contains(v[0], "the reaper was down during the wait") {
		t.Errorf("a 16 s wait with the reaper down: %v", v)
	}
}
