package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
)

// Liveness (issue #23): besides the safety checks, a round measures how
// long each task attempt waited from ready to leased, and how long the
// drain took, and fails when either exceeds a bound derived from the
// round's configuration (docs/RELIABILITY.md, "Liveness").
//
// An attempt's wait runs from when it became claimable — its step_ready
// journal entry, or the time its retry was scheduled for
// (step_retry_scheduled "retry at …") when that is later — to when it
// was leased: its step_claimed entry (dated at the claim), or, for an
// attempt cut by the run's end (the record keeps no attempt then), the
// claim a worker's history shows for it. An attempt no claim was seen for
// waits until its run ended (a lower bound of its wait, counted as such).
//
// "While an eligible worker was idle" is approximated from the workers'
// call history and the driver's process table, in two readings. A worker
// claims only for its free slots; a claim the engine answers with fewer
// leases than asked for had nothing more at hand for it.
//
//   - idle (judged by default): time in which some worker was in a claim
//     the engine answered with no lease — it held the claim, scanning the
//     bucket for work whose hint it lacked, and found nothing;
//   - free slots (judged with Config.StrictLiveness, CHAOS_LIVENESS=free):
//     time in which some worker was in a claim answered with fewer leases
//     than it asked for — it had free slots, and got some work, or none.
//
// Either counts only claims at an API instance that was up (not killed,
// not paused), with the store process (when the round runs one) up. Time
// in which every worker was busy, down, or claiming from an instance that
// was down is not counted: that is throughput, which the drain bound
// judges. The idle reading undercounts (a claim held, then answered with a
// lease, counts nothing: by its times a hold cannot be told from a fast
// answer with work) and is what the bound holds for today; the free-slot
// reading also counts a worker whose claims keep finding work of their
// own instance while an attempt whose hint no instance holds waits for a
// fallback scan — a starvation the first short rounds showed (seed 1:
// 20–25 s; docs/RELIABILITY.md, Findings). Both are reported, with the
// whole waits.

// procEvent is a process of the round going up or down.
type procEvent struct {
	At   time.Time
	Proc string
	Up   bool
}

// timeline records the driver's process table over the round.
type timeline struct {
	mu sync.Mutex
	ev []procEvent
}

// mark records that proc went up or down now (a nil timeline records
// nothing).
func (t *timeline) mark(proc string, up bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.ev = append(t.ev, procEvent{At: time.Now().Round(0), Proc: proc, Up: up})
	t.mu.Unlock()
}

func (t *timeline) events() []procEvent {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.ev)
}

// span is the time from From up to To.
type span struct{ From, To time.Time }

// forever ends the last span of a timeline still open.
var forever = time.Unix(1<<40, 0)

// claimSpan is a claim a worker made with free slots left after its
// answer, at an API instance (see freeClaims).
type claimSpan struct {
	API      string
	From, To time.Time
	// Empty: answered with no lease (the worker was idle).
	Empty bool
}

// freeClaims returns the claims the engine answered (200) with fewer
// leases than the worker asked for, from the claim's invocation to its
// answer, each with the API instance its worker claims from (workerAPI,
// by process name: a history's worker is <process>-g<start>).
func freeClaims(calls []Call, workerAPI map[string]string) []claimSpan {
	var out []claimSpan
	for _, c := range calls {
		if c.Path != "/steps/claim" || c.Pending || c.Status != 200 || c.End == 0 || c.End == math.MaxInt64 {
			continue
		}
		proc := c.Worker
		if i := strings.LastIndex(proc, "-g"); i > 0 {
			proc = proc[:i]
		}
		api, ok := workerAPI[proc]
		if !ok {
			continue
		}
		var req struct {
			Max int `json:"max"`
		}
		var resp struct {
			Leases []json.RawMessage `json:"leases"`
		}
		if json.Unmarshal(c.Resp, &resp) != nil || len(c.Req) > 0 && json.Unmarshal(c.Req, &req) != nil {
			continue
		}
		if len(resp.Leases) >= max(req.Max, 1) {
			continue // all it asked for
		}
		out = append(out, claimSpan{API: api, From: time.Unix(0, c.Start), To: time.Unix(0, c.End), Empty: len(resp.Leases) == 0})
	}
	return out
}

// claimable returns the spans in which a worker was in one of claims (with
// emptyOnly, one answered with no lease) at an API instance that was up,
// with the store process (store; "" when the round runs none) up. It is
// never nil.
func claimable(events []procEvent, claims []claimSpan, store string, emptyOnly bool) []span {
	type ev struct {
		at   time.Time
		proc string // a process going up or down
		up   bool
		api  string // a claim at api starting (+1) or ending (-1)
		d    int
	}
	evs := make([]ev, 0, len(events)+2*len(claims))
	for _, e := range events {
		evs = append(evs, ev{at: e.At, proc: e.Proc, up: e.Up})
	}
	for _, c := range claims {
		if emptyOnly && !c.Empty {
			continue
		}
		evs = append(evs, ev{at: c.From, api: c.API, d: 1}, ev{at: c.To, api: c.API, d: -1})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	up := map[string]bool{}
	waiting := map[string]int{}
	ok := func() bool {
		if store != "" && !up[store] {
			return false
		}
		for api, n := range waiting {
			if n > 0 && up[api] {
				return true
			}
		}
		return false
	}
	out := []span{}
	var from time.Time
	on := false
	for i := 0; i < len(evs); {
		t := evs[i].at
		for ; i < len(evs) && evs[i].at.Equal(t); i++ {
			if e := evs[i]; e.api != "" {
				waiting[e.api] += e.d
			} else {
				up[e.proc] = e.up
			}
		}
		switch now := ok(); {
		case now && !on:
			from, on = t, true
		case !now && on:
			out = append(out, span{from, t})
			on = false
		}
	}
	if on {
		out = append(out, span{from, forever})
	}
	return out
}

// downSpans returns the spans in which proc was down (killed or paused),
// sorted; before its first start it is not counted.
func downSpans(events []procEvent, proc string) []span {
	var out []span
	var from time.Time
	down := false
	for _, e := range events {
		switch {
		case e.Proc != proc:
		case !e.Up && !down:
			from, down = e.At, true
		case e.Up && down:
			out = append(out, span{from, e.At})
			down = false
		}
	}
	if down {
		out = append(out, span{from, forever})
	}
	return out
}

// covered is how much of [a, b) the sorted, disjoint spans cover.
func covered(spans []span, a, b time.Time) time.Duration {
	var d time.Duration
	i := sort.Search(len(spans), func(i int) bool { return spans[i].To.After(a) })
	for ; i < len(spans) && spans[i].From.Before(b); i++ {
		from, to := spans[i].From, spans[i].To
		if from.Before(a) {
			from = a
		}
		if to.After(b) {
			to = b
		}
		if to.After(from) {
			d += to.Sub(from)
		}
	}
	return d
}

// runJournal is one ended run's journal.
type runJournal struct {
	ID      string
	Entries []cairn.JournalEntry
}

// attemptKey names one attempt of one step of one run.
type attemptKey struct {
	Run, Step string
	N         int
}

// Sample is one task attempt's wait from ready to leased.
type Sample struct {
	Run, Step string
	Attempt   int
	Ready     time.Time
	// Leased is when the attempt was leased; with NotLeased, when its run
	// ended with no claim of it seen (its wait was at least that long).
	Leased    time.Time
	NotLeased bool
	// Raw is Leased − Ready; Idle and Free the parts of it counted by the
	// two readings above.
	Raw, Idle, Free time.Duration
	// ReaperDown: the reaper was down (killed or paused) for some of the
	// wait, so a lost hint could not be announced again: the bound is
	// the fallback scans' (readyBound).
	ReaperDown bool `json:",omitempty"`
}

func (s Sample) String() string {
	leased := "leased " + s.Leased.UTC().Format("15:04:05.000")
	if s.NotLeased {
		leased = "not leased; the run ended " + s.Leased.UTC().Format("15:04:05.000")
	}
	return fmt.Sprintf("run %s step %s attempt %d: ready %s, %s (waited %v; while a worker was idle %v, had free slots %v)",
		s.Run, s.Step, s.Attempt, s.Ready.UTC().Format("15:04:05.000"), leased, s.Raw.Round(time.Millisecond), s.Idle.Round(time.Millisecond), s.Free.Round(time.Millisecond))
}

// retryAt parses the time a step_retry_scheduled entry's message names.
func retryAt(msg string) (time.Time, bool) {
	s, ok := strings.CutPrefix(msg, "retry at ")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// attemptSamples returns the ready-to-leased wait of every task attempt
// the journals show ready, with leases the journals lack taken from
// claims (the history's answered claims). idle and free are the spans the
// two readings count (nil: all time counts).
func attemptSamples(runs []runJournal, claims map[attemptKey]time.Time, idle, free, reaperDown []span) []Sample {
	var out []Sample
	for _, run := range runs {
		type sn struct {
			step string
			n    int
		}
		ready := map[sn]time.Time{}
		claimed := map[sn]time.Time{}
		var order []sn // the attempts a step_ready names, in order
		listed := map[sn]bool{}
		var end time.Time
		for _, e := range run.Entries {
			k := sn{e.Step, e.Attempt}
			switch e.Type {
			case cairn.JournalStepReady:
				if !listed[k] {
					listed[k] = true
					order = append(order, k)
				}
				if t := ready[k]; e.At.After(t) {
					ready[k] = e.At
				}
			case cairn.JournalStepRetryScheduled:
				// The next attempt is claimable from the retry's time.
				if at, ok := retryAt(e.Message); ok {
					k.n++
					if t := ready[k]; at.After(t) {
						ready[k] = at
					}
				}
			case cairn.JournalStepClaimed:
				if t, seen := claimed[k]; !seen || e.At.Before(t) {
					claimed[k] = e.At
				}
			default:
				if isRunEnd(e.Type) {
					end = e.At
				}
			}
		}
		for _, k := range order {
			s := Sample{Run: run.ID, Step: k.step, Attempt: k.n, Ready: ready[k]}
			if t, ok := claimed[k]; ok {
				s.Leased = t
			} else if t, ok := claims[attemptKey{run.ID, k.step, k.n}]; ok {
				s.Leased = t
			} else if !end.IsZero() {
				s.Leased, s.NotLeased = end, true
			} else {
				continue // an open run: the stuck check's
			}
			if s.Leased.Before(s.Ready) {
				s.Leased = s.Ready
			}
			s.Raw = s.Leased.Sub(s.Ready)
			s.Idle, s.Free = s.Raw, s.Raw
			if idle != nil {
				s.Idle = covered(idle, s.Ready, s.Leased)
			}
			if free != nil {
				s.Free = covered(free, s.Ready, s.Leased)
			}
			s.ReaperDown = covered(reaperDown, s.Ready, s.Leased) > 0
			out = append(out, s)
		}
	}
	return out
}

// historyClaims returns when each attempt a recorded call answered with a
// lease for was leased (its expiry less the lease TTL: the engine's claim
// time): claims, and completes that claimed the worker's next lease
// (eager dispatch).
func historyClaims(calls []Call) map[attemptKey]time.Time {
	out := map[attemptKey]time.Time{}
	for _, c := range calls {
		if c.Status != 200 || c.Pending || !bytes.Contains(c.Resp, []byte(`"leases"`)) {
			continue
		}
		var r struct {
			Leases []struct {
				Run       string    `json:"run"`
				Step      string    `json:"step"`
				Attempt   int       `json:"attempt"`
				ExpiresAt time.Time `json:"expires_at"`
				TTLMs     int64     `json:"lease_ttl_ms"`
			} `json:"leases"`
		}
		if json.Unmarshal(c.Resp, &r) != nil {
			continue
		}
		for _, l := range r.Leases {
			if l.Run == "" || l.TTLMs == 0 {
				continue
			}
			k := attemptKey{l.Run, l.Step, l.Attempt}
			at := l.ExpiresAt.Add(-time.Duration(l.TTLMs) * time.Millisecond)
			if t, ok := out[k]; !ok || at.Before(t) {
				out[k] = at
			}
		}
	}
	return out
}

// isRunEnd reports whether t is a run's end.
func isRunEnd(t cairn.JournalType) bool {
	switch t {
	case cairn.JournalRunCompleted, cairn.JournalRunFailed, cairn.JournalRunCancelled, cairn.JournalRunTimedOut:
		return true
	}
	return false
}

// peakActive is the most runs open at once (started, not yet ended).
func peakActive(runs []runJournal) int {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, run := range runs {
		var start, end time.Time
		for _, e := range run.Entries {
			switch {
			case e.Type == cairn.JournalRunStarted:
				start = e.At
			case isRunEnd(e.Type):
				end = e.At
			}
		}
		if start.IsZero() {
			continue
		}
		edges = append(edges, edge{start, 1})
		if !end.IsZero() {
			edges = append(edges, edge{end, -1})
		}
	}
	// Ends before starts at the same instant.
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].d < edges[j].d
	})
	n, peak := 0, 0
	for _, e := range edges {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// percentile is the nearest-rank q-quantile of sorted (0 when empty).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted))-1e-9)) - 1 // 0.99 × 200 is 198, not 198.000…1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// liveParams are what the bounds derive from: the round's configuration
// (see startAll) and two allowances.
type liveParams struct {
	// LeaseTTL is CAIRN_LEASE_TTL; Reaper the reaper's period (--every).
	LeaseTTL, Reaper time.Duration
	// Fallback is CAIRN_FALLBACK_INTERVAL: how often an instance with a
	// waiting claim scans scanRuns runs for work whose hint it lacks.
	Fallback time.Duration
	// Bus: hints reach every instance; one lost with its publisher is
	// announced again by the reaper once AnnounceAfter passed, at its
	// next visit of the run (every ActiveCheck).
	Bus                        bool
	AnnounceAfter, ActiveCheck time.Duration
	// Slack allows for a loaded 2-core machine: a process's start, the
	// SDK's backoff after its API instance came back, a scan's own reads
	// through injected faults.
	Slack time.Duration
	// Workload is the slowest chaos run's own time, unloaded.
	Workload time.Duration
}

// scanRunsPerFallback is how many runs one fallback scan reads
// (engine/claim.go scanRuns); scanBehindEvery the least spacing of the
// scans a claim answered with free slots starts (scanBehindEvery there).
const (
	scanRunsPerFallback = 16
	scanBehindEvery     = time.Second
)

// readyBound is L1: the longest a ready attempt may wait for a lease while
// a worker waited for work, with active runs open. Work made ready on an
// instance where no claim waits reaches a claim elsewhere through a
// fallback scan, which reads 16 runs per interval per instance: within
// ceil(active/16) intervals a scan has passed every run. With a bus the
// hint reaches every instance at once; one lost with its publisher is
// announced again after AnnounceAfter, at the reaper's next visit.
// A worker whose claims find work of their own instance (the free-slot
// reading, freeSlots) is not in an empty claim: its instance scans at the
// spacing of the scans such claims start, at least scanBehindEvery.
// reaperUp says the reaper ran throughout the wait: when it did not, a
// lost hint is found by the fallback scans only.
func (p liveParams) readyBound(active int, freeSlots, reaperUp bool) (time.Duration, string) {
	scans := max(1, (active+scanRunsPerFallback-1)/scanRunsPerFallback)
	every, name := p.Fallback, "fallback"
	if freeSlots {
		every, name = max(p.Fallback, scanBehindEvery), "scan behind a claim"
	}
	d := every * time.Duration(scans)
	why := fmt.Sprintf("%s %v × ceil(%d active runs / %d)", name, every, active, scanRunsPerFallback)
	if ann := p.AnnounceAfter + p.ActiveCheck; p.Bus && reaperUp && ann < d {
		d = ann
		why = fmt.Sprintf("re-announce after %v + reaper visit every %v", p.AnnounceAfter, p.ActiveCheck)
	}
	return d + p.Reaper + p.Slack, fmt.Sprintf("%s + reaper %v + slack %v", why, p.Reaper, p.Slack)
}

// drainBound is L3: the longest the drain may take. The driver's own time
// (restarting what is down, the delayed and late sends), measured; leases
// held by killed workers expire and are recovered (lease TTL plus the
// recovery window, under 2 × TTL, and 2 reaper periods); the backlog —
// the attempts leased after the drain began — runs at the throughput
// measured during the chaos (attempts leased a second: a drain cannot be
// faster than the work, and the chaos phase, with processes down, is no
// faster than the drain); the last attempt waits up to L1 and its run
// takes the slowest workload's own time.
func (p liveParams) drainBound(driver time.Duration, backlog int, throughput float64, l1 time.Duration) (time.Duration, string) {
	var work time.Duration
	if throughput > 0 {
		work = time.Duration(float64(backlog) / throughput * float64(time.Second))
	}
	d := driver + 2*p.LeaseTTL + 2*p.Reaper + work + l1 + p.Workload
	return d, fmt.Sprintf("driver %v + 2×lease TTL %v + 2×reaper %v + backlog %d attempts at %.1f/s %v + L1 %v + workload %v",
		driver.Round(time.Millisecond), p.LeaseTTL, p.Reaper, backlog, throughput, work.Round(time.Millisecond), l1.Round(time.Millisecond), p.Workload)
}

// Dist is a distribution's median, 99th percentile and maximum.
type Dist struct{ P50, P99, Max time.Duration }

func dist(ds []time.Duration) Dist {
	slices.Sort(ds)
	return Dist{percentile(ds, 0.50), percentile(ds, 0.99), percentile(ds, 1)}
}

func (d Dist) String() string {
	return fmt.Sprintf("p50=%v p99=%v max=%v", d.P50.Round(time.Millisecond), d.P99.Round(time.Millisecond), d.Max.Round(time.Millisecond))
}

// Liveness is what a round measured of its liveness, and its bounds.
type Liveness struct {
	// Attempts counts the attempts measured; NotLeased those whose run
	// ended before a claim of them was seen (counted at the run's end).
	Attempts, NotLeased int
	// Idle, Free and Whole are the waits counted by the two readings
	// (while a worker was idle; while one had free slots) and whole.
	Idle, Free, Whole Dist
	// Strict: the free-slot reading is judged, not the idle one.
	Strict bool
	// PeakActive is the most runs open at once.
	PeakActive int
	// Bound is L1, the judged reading's bound; BoundWhy how it was derived.
	// NoReaperBound is L1 for a wait during which the reaper was down
	// (with a bus, the fallback scans' bound; else Bound).
	Bound, NoReaperBound       time.Duration
	BoundWhy, NoReaperBoundWhy string
	// Throughput is attempts leased a second during the chaos; Backlog
	// the attempts leased after the drain began.
	Throughput float64
	Backlog    int
	// DrainBound is L3, the drain's bound; DrainWhy how it was derived.
	DrainBound time.Duration
	DrainWhy   string
	// samples are every attempt's wait (written to liveness.jsonl).
	samples []Sample
	// Worst are the longest waits of the judged reading, longest first;
	// WorstFree of the free-slot reading, WorstRaw whole.
	Worst, WorstFree, WorstRaw []Sample
}

// judged is the reading of s that L1 applies to.
func (l *Liveness) judged(s Sample) time.Duration {
	if l.Strict {
		return s.Free
	}
	return s.Idle
}

// boundOf is the L1 bound of s's wait.
func (l *Liveness) boundOf(s Sample) time.Duration {
	if s.ReaperDown {
		return l.NoReaperBound
	}
	return l.Bound
}

// Judged is the distribution L1 applies to.
func (l *Liveness) Judged() Dist {
	if l.Strict {
		return l.Free
	}
	return l.Idle
}

// liveInput is what measureLiveness reads.
type liveInput struct {
	Runs   []runJournal
	Claims map[attemptKey]time.Time
	// IdleSpans and FreeSpans are what the two readings count (nil: all
	// time counts); Strict judges the free-slot reading. ReaperDown are
	// the spans the reaper was down.
	IdleSpans, FreeSpans, ReaperDown []span
	Strict                           bool
	// ChaosStart and DrainStart bound the chaos phase; Driver is the
	// drain's time spent by the driver itself (see drainBound).
	ChaosStart, DrainStart time.Time
	Driver                 time.Duration
	Params                 liveParams
}

// worstKept is how many of the longest waits a report keeps.
const worstKept = 5

// longest returns the worstKept samples with the longest wait by key.
func longest(samples []Sample, key func(Sample) time.Duration) []Sample {
	ss := slices.Clone(samples)
	sort.SliceStable(ss, func(i, j int) bool { return key(ss[i]) > key(ss[j]) })
	return ss[:min(worstKept, len(ss))]
}

// measureLiveness computes the waits, their percentiles and the bounds.
func measureLiveness(in liveInput) Liveness {
	samples := attemptSamples(in.Runs, in.Claims, in.IdleSpans, in.FreeSpans, in.ReaperDown)
	l := Liveness{Strict: in.Strict, samples: samples}
	var idle, free, whole []time.Duration
	var chaosLeased int
	for _, s := range samples {
		l.Attempts++
		if s.NotLeased {
			l.NotLeased++
		} else if !s.Leased.Before(in.DrainStart) {
			l.Backlog++
		} else if !s.Leased.Before(in.ChaosStart) {
			chaosLeased++
		}
		idle, free, whole = append(idle, s.Idle), append(free, s.Free), append(whole, s.Raw)
	}
	l.Idle, l.Free, l.Whole = dist(idle), dist(free), dist(whole)
	l.WorstRaw = longest(samples, func(s Sample) time.Duration { return s.Raw })
	l.WorstFree = longest(samples, func(s Sample) time.Duration { return s.Free })
	l.Worst = longest(samples, func(s Sample) time.Duration { return s.Idle })
	if l.Strict {
		l.Worst = l.WorstFree
	}
	l.PeakActive = peakActive(in.Runs)
	l.Bound, l.BoundWhy = in.Params.readyBound(l.PeakActive, l.Strict, true)
	l.NoReaperBound, l.NoReaperBoundWhy = in.Params.readyBound(l.PeakActive, l.Strict, false)
	if chaos := in.DrainStart.Sub(in.ChaosStart); chaos > 0 {
		l.Throughput = float64(chaosLeased) / chaos.Seconds()
	}
	l.DrainBound, l.DrainWhy = in.Params.drainBound(in.Driver, l.Backlog, l.Throughput, l.Bound)
	return l
}

// violations are the liveness bounds a round broke, each with the
// longest waits for a human to look at.
func (l *Liveness) violations(drain time.Duration) []string {
	worst := func(ss []Sample) string {
		var b strings.Builder
		b.WriteString("; the longest waits:")
		for _, s := range ss {
			b.WriteString("\n    " + s.String())
		}
		return b.String()
	}
	reading := "was idle"
	if l.Strict {
		reading = "had free slots"
	}
	var out []string
	// Each wait against its bound: a wait while the reaper was down has
	// the fallback scans' (with a bus, the looser one).
	var over []Sample
	for _, s := range l.samples {
		if l.judged(s) > l.boundOf(s) {
			over = append(over, s)
		}
	}
	if len(over) > 0 {
		s := longest(over, func(s Sample) time.Duration { return l.judged(s) - l.boundOf(s) })[0]
		bound, why := l.Bound, l.BoundWhy
		if s.ReaperDown {
			bound, why = l.NoReaperBound, l.NoReaperBoundWhy+"; the reaper was down during the wait"
		}
		out = append(out, fmt.Sprintf("liveness: a ready attempt waited %v for a lease while a worker %s, above the bound L1 = %v (%s); %d waits over their bound%s",
			l.judged(s).Round(time.Millisecond), reading, bound.Round(time.Millisecond), why, len(over), worst(longest(over, l.judged))))
	}
	if l.DrainBound > 0 && drain > l.DrainBound {
		out = append(out, fmt.Sprintf("liveness: the drain took %v, above the bound L3 = %v (%s)%s",
			drain.Round(time.Millisecond), l.DrainBound.Round(time.Millisecond), l.DrainWhy, worst(l.WorstRaw)))
	}
	return out
}

// String is the report's liveness lines.
func (l *Liveness) String() string {
	idle, free := " (judged)", ""
	if l.Strict {
		idle, free = "", " (judged)"
	}
	noReaper := ""
	if l.NoReaperBound != l.Bound {
		noReaper = fmt.Sprintf("; while the reaper was down L1=%v [%s]", l.NoReaperBound.Round(time.Millisecond), l.NoReaperBoundWhy)
	}
	return fmt.Sprintf("  ready→leased: attempts=%d (not leased before the run ended=%d) bound L1=%v [%s]%s\n"+
		"    while a worker was idle%s %v; while one had free slots%s %v; whole %v\n"+
		"  drain bound L3=%v [%s]\n",
		l.Attempts, l.NotLeased, l.Bound.Round(time.Millisecond), l.BoundWhy, noReaper,
		idle, l.Idle, free, l.Free, l.Whole,
		l.DrainBound.Round(time.Millisecond), l.DrainWhy)
}

// checkLiveness measures the round's ready-to-leased waits from the
// journals checkRuns read (and the history's claims), and fails the round
// when the longest exceeds L1 or the drain exceeds L3.
func (r *round) checkLiveness() {
	calls, err := readLines[Call](r.hist)
	if err != nil {
		r.logf("chaos: liveness: history: %v (claims the journals lack are not known)", err)
	}
	events := r.tl.events()
	writeLines(r, "procs.jsonl", events)
	claims := freeClaims(calls, r.workerAPI)
	l := measureLiveness(liveInput{
		Runs: r.journals, Claims: historyClaims(calls), Strict: r.cfg.StrictLiveness,
		IdleSpans:  claimable(events, claims, storeName(r.store), true),
		FreeSpans:  claimable(events, claims, storeName(r.store), false),
		ReaperDown: downSpans(events, "reaper"),
		ChaosStart: r.chaosStart, DrainStart: r.drainStart, Driver: r.driverDone.Sub(r.drainStart),
		Params: r.liveParams(),
	})
	r.rep.Live = l
	r.logf("chaos: ready→leased over %d attempts, judged (%s) %v (bound %v); drain %v (bound %v)",
		l.Attempts, map[bool]string{false: "while a worker was idle", true: "while one had free slots"}[l.Strict], l.Judged(), l.Bound.Round(time.Millisecond),
		r.rep.Drain.Round(time.Millisecond), l.DrainBound.Round(time.Millisecond))
	for _, s := range l.WorstFree {
		r.logf("chaos: a long wait while a worker had free slots: %s", s)
	}
	for _, s := range l.WorstRaw {
		r.logf("chaos: a long wait (whole): %s", s)
	}
	writeLines(r, "liveness.jsonl", l.samples)
	for _, v := range l.violations(r.rep.Drain) {
		r.rep.fail("%s", v)
	}
}

func storeName(p *proc) string {
	if p == nil {
		return ""
	}
	return p.name
}

// writeLines writes vs as JSON lines to a file of the round's directory:
// procs.jsonl (when each process went up or down) and liveness.jsonl
// (every attempt's wait), for a human looking into a liveness failure.
func writeLines[T any](r *round, name string, vs []T) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, v := range vs {
		enc.Encode(v)
	}
	if err := os.WriteFile(filepath.Join(r.cfg.Dir, name), b.Bytes(), 0o644); err != nil {
		r.logf("chaos: %v", err)
	}
}
