package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/engine/resultcache"
)

// fetchWorkflow's step get caches its output by the url of its input for
// an hour; use runs after it.
func fetchWorkflow() cairn.Workflow {
	return cairn.Workflow{Name: "fetch", Version: "1", Steps: []cairn.Step{
		{ID: "get", Input: json.RawMessage(`{"url": "${input.url}", "n": "${input.n}"}`), Cache: &cairn.StepCache{Key: "input.url", TTL: cairn.Duration(time.Hour)}},
		{ID: "use", After: []string{"get"}},
	}}
}

// runStep claims one lease, which must be of step, and completes it with
// output; it waits for the writes the complete asked for (a cache entry).
func (h *harness) runStep(step, output string) cairn.Lease {
	h.t.Helper()
	l := h.claim("w")
	if l.Step != step {
		h.t.Fatalf("claimed step %s of run %s, want %s", l.Step, l.Run, step)
	}
	h.complete(l.ID, output)
	h.e.flows.Wait()
	return l
}

// fetchRun starts a run of fetch for url and n and, when get is not
// cached, has a worker complete it with output; then use. It returns the
// run's id.
func (h *harness) fetchRun(url string, n int, output string) string {
	h.t.Helper()
	id := h.start("fetch", fmt.Sprintf(`{"url": %q, "n": %d}`, url, n))
	if stepOf(h.run(id), "get").Status != cairn.StepCompleted {
		h.runStep("get", output)
	}
	h.runStep("use", "")
	if r := h.run(id); r.Status != cairn.RunCompleted {
		h.t.Fatalf("run %s is %s, want completed", id, r.Status)
	}
	return id
}

// wantCached checks that the get step of run was completed from the cache
// with output, computed by run from.
func wantCached(t *testing.T, h *harness, run, from, output string) {
	t.Helper()
	get := stepOf(h.run(run), "get")
	if get.Cached == nil || get.Cached.Run != from || get.Cached.Attempt != 1 || string(get.Output) != output || len(get.Attempts) != 0 {
		t.Fatalf("run %s step get: cached %+v, output %s, attempts %+v; want cached from %s with %s and no attempt", run, get.Cached, get.Output, get.Attempts, from, output)
	}
	journal, err := h.e.Journal(h.ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range journal {
		if j.Type == cairn.JournalStepCompleted && j.Step == "get" && j.Cached != nil && j.Cached.Run == from {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("run %s: %d cached step_completed entries of get, want 1", run, n)
	}
}

// TestResultCacheHitMissAndTTL: a run whose step key has a fresh entry
// completes that step from it, marked cached, and no worker claims it;
// another key, or the same one past its ttl, runs the step, and its
// complete writes the entry the next run takes.
func TestResultCacheHitMissAndTTL(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		first := h.fetchRun("u1", 1, `{"body":"one"}`)
		if get := stepOf(h.run(first), "get"); get.Cached != nil {
			t.Fatalf("first run's get is cached: %+v", get.Cached)
		}
		second := h.fetchRun("u1", 2, "") // no claim of get: it fails if one comes
		wantCached(t, h, second, first, `{"body":"one"}`)
		h.fetchRun("u2", 1, `{"body":"other"}`) // another url: a miss
		h.clk.Advance(time.Hour)
		stale := h.fetchRun("u1", 3, `{"body":"two"}`) // past the ttl: a miss
		if get := stepOf(h.run(stale), "get"); get.Cached != nil {
			t.Fatalf("stale entry used: %+v", get.Cached)
		}
		wantCached(t, h, h.fetchRun("u1", 4, ""), stale, `{"body":"two"}`)
	}, withWorkflows("w", fetchWorkflow()))
}

// TestResultCacheInvalidate: deleting one key's entry, or a step's, makes
// the next run with that key run the step.
func TestResultCacheInvalidate(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		h.fetchRun("u1", 1, `1`)
		h.fetchRun("u2", 1, `2`)
		n, err := h.e.Results().Invalidate(h.ctx, "fetch", "get", json.RawMessage(`"u1"`))
		if err != nil || n != 1 {
			t.Fatalf("invalidate u1: %d, %v; want 1", n, err)
		}
		h.fetchRun("u1", 2, `3`) // a miss: the claim of get comes
		from := h.fetchRunID(t, "u2")
		wantCached(t, h, h.fetchRun("u2", 2, ""), from, `2`)
		n, err = h.e.Results().Invalidate(h.ctx, "fetch", "get", nil)
		if err != nil || n != 2 {
			t.Fatalf("invalidate the step: %d, %v; want 2", n, err)
		}
		h.fetchRun("u1", 3, `4`)
		h.fetchRun("u2", 3, `5`)
		if _, err := h.e.Results().Invalidate(h.ctx, "fetch", "get", json.RawMessage(`{`)); err == nil {
			t.Fatal("invalidating a key that is not JSON: no error")
		}
	}, withWorkflows("w", fetchWorkflow()))
}

// fetchRunID is the id of the run of fetch for url that computed the
// cached entry of url (the entry names it).
func (h *harness) fetchRunID(t *testing.T, url string) string {
	t.Helper()
	e := h.fetchEntry(t, url)
	if e == nil {
		t.Fatalf("no entry for %s", url)
	}
	return e.Run
}

// fetchEntry is the fetch cache's fresh entry for url, or nil.
func (h *harness) fetchEntry(t *testing.T, url string) *resultcache.Entry {
	t.Helper()
	d, err := resultcache.Digest(json.RawMessage(fmt.Sprintf("%q", url)))
	if err != nil {
		t.Fatal(err)
	}
	ls := []resultcache.Lookup{{Step: "get", Digest: d, TTL: time.Hour}}
	h.e.Results().Find(h.ctx, "fetch", ls)
	return ls[0].Entry
}

// awaitEntry returns once the fetch cache holds an entry for url, and
// fails the test after within. The entry is written after the complete
// that computed it has committed, in the background: a reader that saw
// the complete may come before it is even scheduled.
func (h *harness) awaitEntry(t *testing.T, url string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); h.fetchEntry(t, url) == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no cache entry for %s %v after its step completed: its background write did not land", url, within)
		}
	}
}

// TestResultCacheBounded: an output over the entry cap is not cached
// (the next run runs the step), and a definition's cache is checked.
func TestResultCacheBounded(t *testing.T) {
	h := newHarness(t, withWorkflows("w", fetchWorkflow()))
	big := `"` + strings.Repeat("x", resultcache.MaxEntry) + `"`
	h.fetchRun("u1", 1, big)
	h.fetchRun("u1", 2, `"small"`) // a miss: the big output was not cached
	objs, err := h.store.ListAll(h.ctx, "cache/")
	if err != nil || len(objs) != 1 {
		t.Fatalf("cache objects %+v, %v; want the small one", objs, err)
	}
	for _, c := range []struct {
		step cairn.Step
		want string
	}{
		{cairn.Step{ID: "a", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Second), Cache: &cairn.StepCache{}}, "cache applies to task steps only"},
		{cairn.Step{ID: "a", Cache: &cairn.StepCache{TTL: cairn.Duration(31 * 24 * time.Hour)}}, "cache.ttl"},
		{cairn.Step{ID: "a", Cache: &cairn.StepCache{Key: "input.("}}, "cache.key"},
	} {
		_, err := h.e.Register(h.ctx, cairn.RegisterRequest{WorkerID: "w", Workflows: []cairn.Workflow{single("bad", c.step)}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("register %+v: %v, want an error about %s", c.step, err, c.want)
		}
	}
}

// TestResultCacheHitRacingMiss: runs with one key started while workers
// complete others: every run completes, each get either ran (its own
// output) or took the output a run computed, and the entry left is one
// of the computed outputs.
func TestResultCacheHitRacingMiss(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
		defer cancel()
		var workers sync.WaitGroup
		for range 3 {
			workers.Go(func() {
				for ctx.Err() == nil {
					ls, err := h.e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", Max: 1, WaitMs: 100})
					for _, l := range ls {
						if err == nil {
							_, err = h.e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(fmt.Sprintf(`{"by": %q}`, l.Run))})
						}
					}
					if err != nil && ctx.Err() == nil {
						t.Errorf("worker: %v", err)
					}
				}
			})
		}
		var ids []string
		var mu sync.Mutex
		startSome := func(from, to int) {
			var starts sync.WaitGroup
			for i := from; i < to; i++ {
				starts.Go(func() {
					id := mustStart(t, h.e, "fetch", fmt.Sprintf(`{"url": "same", "n": %d}`, i))
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				})
			}
			starts.Wait()
		}
		// Six runs miss together; six more start once one of them has
		// written the entry, while the others still complete and write.
		startSome(0, 6)
		awaitRun(t, h.e, ids[0], "its get completed", func(r *cairn.Run) bool { return stepOf(r, "get").Status == cairn.StepCompleted })
		h.awaitEntry(t, "same", 10*time.Second)
		startSome(6, 12)
		if diag := awaitCompleted(t, h.e, ids, 20*time.Second); diag != "" {
			t.Fatal(diag)
		}
		cancel()
		workers.Wait()
		h.e.flows.Wait()
		computed := map[string]bool{} // the runs whose get ran
		for _, id := range ids {
			get := stepOf(h.run(id), "get")
			if get.Cached == nil {
				if string(get.Output) != fmt.Sprintf(`{"by":%q}`, id) && string(get.Output) != fmt.Sprintf(`{"by": %q}`, id) {
					t.Errorf("run %s ran get but its output is %s", id, get.Output)
				}
				computed[id] = true
			}
		}
		for _, id := range ids {
			if get := stepOf(h.run(id), "get"); get.Cached != nil && (!computed[get.Cached.Run] || !strings.Contains(string(get.Output), get.Cached.Run)) {
				t.Errorf("run %s took %s from run %s, which did not compute it", id, get.Output, get.Cached.Run)
			}
		}
		if from := h.fetchRunID(t, "same"); !computed[from] {
			t.Errorf("the entry left names run %s, which did not compute get", from)
		}
		if len(computed) == len(ids) {
			t.Error("every run ran get: the runs started after an entry was written did not take it")
		}
		t.Logf("%d of %d runs ran get", len(computed), len(ids))
	}, withWorkflows("w", fetchWorkflow()))
}

// TestResultCacheRequests: what a cached step adds per run: a miss one GET
// (at the step's readiness) and one PUT (after its complete); a hit one
// GET, and no lease or record write of its own (the run's one write holds
// it).
func TestResultCacheRequests(t *testing.T) {
	plain := cairn.Workflow{Name: "plain", Version: "1", Steps: []cairn.Step{{ID: "get"}}}
	cached := cairn.Workflow{Name: "cached", Version: "1", Steps: []cairn.Step{{ID: "get", Cache: &cairn.StepCache{}}}}
	h := newHarness(t, counted(), withWorkflows("w", plain, cached))
	warmUp(t, h.e, "w")
	run := func(wf string, work bool) counting.Snapshot {
		h.e.Settle()
		h.counts.Reset()
		id := h.start(wf, `{"x": 1}`)
		if work {
			h.runStep("get", `"out"`)
		}
		h.e.Settle()
		got := h.counts.Snapshot()
		if r := h.run(id); r.Status != cairn.RunCompleted {
			t.Fatalf("run %s of %s is %s", id, wf, r.Status)
		}
		return got
	}
	run("plain", true) // each workflow's definition read once
	run("cached", true)
	h.e.Results().Invalidate(h.ctx, "cached", "get", nil)
	base, miss, hit := run("plain", true), run("cached", true), run("cached", false)
	if d := miss.Sub(base); d != (counting.Snapshot{Get: 1, Put: 1}) {
		t.Errorf("a miss adds %s to the run's %s, want one GET and one PUT", d, base)
	}
	// A hit's run is written once, ended: the entry's GET, the record's
	// create and its timer (retention's, as any ended run's).
	if want := (counting.Snapshot{Get: 1, Create: 1, Put: 1}); hit != want {
		t.Errorf("a hit's run costs %s, want %s", hit, want)
	}
	t.Logf("one-step run: plain %s; cache miss %s; cache hit %s", base, miss, hit)
}
