package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testinfra"
)

// TestDevDueTimesWithinASecond is the L2 bound of docs/ARCHITECTURE.md on
// `cairn dev`, black-box: short timers (1–3 s) — sleeps, a wait timeout,
// a run deadline, and an attempt timeout of attempts claimed and never
// started (issue #23, findings 3 and 4) — take effect no earlier than due
// and at most 1 s after, in 20 of 20 runs started at random phases
// against the reaper's one-second ticks. Lateness is read off the run's
// journal, whose times are the engine's clock, against the due time the
// API itself announced (a sleep's "until", the run's deadline, a lease's
// timeout_at).
func TestDevDueTimesWithinASecond(t *testing.T) {
	bin := buildCairn(t)
	addr := testinfra.FreeAddr(t)
	dir := t.TempDir()
	start(t, bin, []string{"CAIRN_BLOB=file://" + dir, "CAIRN_NOTIFY="}, "dev", "--addr", addr)
	base := "http://" + addr + "/v1/api"
	waitHealthy(t, base)

	task := map[string]any{"id": "t"}
	wfs := []map[string]any{
		{"name": "sleep1", "version": "1", "steps": []map[string]any{task, {"id": "nap", "kind": "sleep", "duration": "1s", "after": []string{"t"}}}},
		{"name": "sleep3", "version": "1", "steps": []map[string]any{task, {"id": "nap", "kind": "sleep", "duration": "3s", "after": []string{"t"}}}},
		{"name": "wait2", "version": "1", "steps": []map[string]any{task, {"id": "w", "kind": "wait", "event": "never", "wait_timeout": "2s", "after": []string{"t"}}}},
		{"name": "deadline2", "version": "1", "deadline": "2s", "steps": []map[string]any{task, {"id": "w", "kind": "wait", "event": "never", "after": []string{"t"}}}},
		{"name": "timeout2", "version": "1", "steps": []map[string]any{task, {"id": "slow", "timeout": "2s", "after": []string{"t"},
			"retry": map[string]any{"max_attempts": 2, "initial_backoff": "100ms"}}}},
	}
	register(t, base, "w", wfs...)

	type result struct {
		kind string
		late []time.Duration
		err  string
	}
	results := make([]result, 20)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
	phases := make([]time.Duration, len(results))
	for i := range phases {
		phases[i] = time.Duration(rng.Int64N(int64(time.Second)))
	}
	var wg sync.WaitGroup
	for i := range results {
		wf := wfs[i%len(wfs)]["name"].(string)
		wg.Go(func() {
			time.Sleep(phases[i] + time.Duration(i/len(wfs))*1100*time.Millisecond)
			late, err := dueLateness(base, wf)
			results[i] = result{kind: wf, late: late, err: err}
		})
	}
	wg.Wait()
	var all []time.Duration
	bad := 0
	for i, r := range results {
		if r.err != "" {
			t.Errorf("run %d (%s): %s", i, r.kind, r.err)
			bad++
			continue
		}
		for _, l := range r.late {
			all = append(all, l)
			if l < 0 || l > time.Second {
				t.Errorf("run %d (%s, phase %v): took effect %v after its due time; the bound is [0, 1s]", i, r.kind, phases[i].Round(time.Millisecond), l.Round(time.Millisecond))
				bad++
			}
		}
	}
	slices.Sort(all)
	if len(all) > 0 {
		t.Logf("%d due times in %d runs: lateness p50 %v, max %v; %d outside [0, 1s]", len(all), len(results),
			all[len(all)/2].Round(time.Millisecond), all[len(all)-1].Round(time.Millisecond), bad)
	}
}

// dueLateness starts a run of wf, completes its first task, and returns
// how late each of its due times took effect (negative: early).
func dueLateness(base, wf string) ([]time.Duration, string) {
	var started struct {
		Run struct {
			ID       string     `json:"id"`
			Deadline *time.Time `json:"deadline"`
		} `json:"run"`
	}
	if s, err := try("POST", base+"/runs", map[string]any{"workflow": wf, "input": map[string]any{}}, &started); err != nil || s != 201 {
		return nil, fmt.Sprintf("start: %d %v", s, err)
	}
	run := started.Run.ID
	type leaseAns struct {
		Leases []struct {
			ID        string     `json:"id"`
			Step      string     `json:"step"`
			Attempt   int        `json:"attempt"`
			TimeoutAt *time.Time `json:"timeout_at"`
		} `json:"leases"`
	}
	claimStep := func(step string, attempt int) (string, *time.Time, string) {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			var ans leaseAns
			s, err := try("POST", base+"/steps/claim", map[string]any{"worker_id": "w", "max": 1, "wait_ms": 5000, "run": run}, &ans)
			if err != nil || s != 200 {
				return "", nil, fmt.Sprintf("claim: %d %v", s, err)
			}
			for _, l := range ans.Leases {
				if l.Step == step && l.Attempt == attempt {
					return l.ID, l.TimeoutAt, ""
				}
				return "", nil, fmt.Sprintf("claimed %s #%d, want %s #%d", l.Step, l.Attempt, step, attempt)
			}
		}
		return "", nil, fmt.Sprintf("%s #%d not offered in 20 s", step, attempt)
	}
	id, _, msg := claimStep("t", 1)
	if msg != "" {
		return nil, msg
	}
	if s, err := try("POST", base+"/steps/"+id+"/complete", map[string]any{"output": 1}, nil); err != nil || s != 200 {
		return nil, fmt.Sprintf("complete t: %d %v", s, err)
	}
	var timeouts []time.Time
	if wf == "timeout2" {
		for attempt := 1; attempt <= 2; attempt++ {
			_, at, msg := claimStep("slow", attempt) // claimed, never started nor heartbeated
			if msg != "" {
				return nil, msg
			}
			if at == nil {
				return nil, "lease of slow has no timeout_at"
			}
			timeouts = append(timeouts, *at)
		}
	}
	// Wait for the run to end (or, for sleeps, to complete).
	var view struct {
		Status string `json:"status"`
	}
	end := time.Now().Add(20 * time.Second)
	for {
		if _, err := try("GET", base+"/runs/"+run+"?wait_ms=5000", nil, &view); err == nil && view.Status != "running" && view.Status != "" {
			break
		}
		if time.Now().After(end) {
			return nil, "run " + run + " did not end in 20 s: " + view.Status
		}
	}
	var j struct {
		Entries []struct {
			At      time.Time `json:"at"`
			Type    string    `json:"type"`
			Step    string    `json:"step"`
			Attempt int       `json:"attempt"`
			Message string    `json:"message"`
		} `json:"entries"`
	}
	if s, err := try("GET", base+"/runs/"+run+"/journal", nil, &j); err != nil || s != 200 {
		return nil, fmt.Sprintf("journal: %d %v", s, err)
	}
	find := func(typ, step string, attempt int) (time.Time, string) {
		for _, e := range j.Entries {
			if e.Type == typ && (step == "" || e.Step == step) && (attempt == 0 || e.Attempt == attempt) {
				return e.At, e.Message
			}
		}
		return time.Time{}, ""
	}
	missing := func(what string) ([]time.Duration, string) {
		return nil, fmt.Sprintf("run %s (%s): no %s in the journal", run, view.Status, what)
	}
	switch wf {
	case "sleep1", "sleep3":
		_, msg := find("sleep_started", "nap", 0)
		until, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(msg, "until "))
		if err != nil {
			return missing("sleep_started with its end")
		}
		done, _ := find("step_completed", "nap", 0)
		if done.IsZero() {
			return missing("end of the sleep")
		}
		return []time.Duration{done.Sub(until)}, ""
	case "wait2":
		began, _ := find("wait_started", "w", 0)
		failed, _ := find("step_failed", "w", 0)
		if began.IsZero() || failed.IsZero() {
			return missing("wait start and timeout")
		}
		return []time.Duration{failed.Sub(began.Add(2 * time.Second))}, ""
	case "deadline2":
		ended, _ := find("run_timed_out", "", 0)
		if ended.IsZero() || started.Run.Deadline == nil {
			return missing("run deadline")
		}
		return []time.Duration{ended.Sub(*started.Run.Deadline)}, ""
	case "timeout2":
		var late []time.Duration
		for i, at := range timeouts {
			failed, _ := find("step_failed", "slow", i+1)
			if failed.IsZero() {
				failed, _ = find("step_retry_scheduled", "slow", i+1)
			}
			if failed.IsZero() {
				return missing(fmt.Sprintf("end of attempt %d of slow", i+1))
			}
			late = append(late, failed.Sub(at))
		}
		return late, ""
	}
	return nil, "unknown workflow " + wf
}
