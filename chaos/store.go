package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// KindStore is the store server itself (MinIO), when the round runs it.
const KindStore Kind = "store"

// StoreProc is a store server the round runs as its own process, so the
// driver can kill (-9), pause and restart it mid-load like any other:
// MinIO started from its binary on a fixed port and data directory, so a
// restart serves the same objects at the same address.
type StoreProc struct {
	Bin  string
	Args []string
	Env  []string
	// Health answers 200 once the server serves (MinIO: /minio/health/live).
	Health string
	// Setup runs once after the first start is healthy (create the bucket).
	Setup func(ctx context.Context) error
}

// OutageCounts are the answers of the API instances to the probes the
// driver sends while the store process is down (killed, not yet back).
type OutageCounts struct {
	// Probes counts answered probes (a run-status read, which reads the
	// store); Unavailable those answered 503 with Retry-After, as
	// docs/API.md promises for an unreachable store; Other the 5xx
	// answers that are not (a 502, or a 503 without Retry-After); OK
	// those the store answered after all (it came back meanwhile).
	Probes, Unavailable, Other, OK int
	// Examples keeps a few of the Other answers for the report.
	Examples []string
}

// startStore starts the store process and waits until it serves.
func (r *round) startStore(ctx context.Context) error {
	sp := r.cfg.StoreProc
	// GOTRACEBACK=crash: a start that hangs is sent SIGABRT and dumps
	// every goroutine to its log (reviveStore).
	env := append([]string{"GOTRACEBACK=crash"}, sp.Env...)
	p := &proc{name: "store", kind: KindStore, bin: sp.Bin, args: sp.Args, dir: r.cfg.Dir,
		env: func(int) []string { return env }, tl: r.tl}
	if err := p.start(); err != nil {
		return err
	}
	r.store = p
	if err := r.waitStore(ctx); err != nil {
		return fmt.Errorf("the store process: %w", err)
	}
	r.tl.mark(p.name, true)
	if sp.Setup != nil {
		if err := sp.Setup(ctx); err != nil {
			return fmt.Errorf("store setup: %w", err)
		}
	}
	return nil
}

// probeOutages asks every running API instance for a run's status while
// the store process is down, and counts how they answer.
func (r *round) probeOutages(ctx context.Context) {
	if r.store == nil {
		return
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	var mu sync.Mutex
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		if r.store.alive() {
			continue
		}
		run := r.anyRun()
		if run == "" {
			continue
		}
		var wg sync.WaitGroup
		for i, base := range r.bases {
			if p := r.apis[i]; !p.alive() || p.isPaused() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := hc.Get(base + "/v1/api/runs/" + run + "/status")
				if err != nil {
					return // the instance was killed or paused meanwhile
				}
				res.Body.Close()
				down := !r.store.alive()
				mu.Lock()
				defer mu.Unlock()
				o := &r.rep.Outage
				switch {
				case res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "":
					o.Probes++
					o.Unavailable++
				case res.StatusCode >= 500:
					o.Probes++
					o.Other++
					if len(o.Examples) < 5 {
						o.Examples = append(o.Examples, fmt.Sprintf("%d Retry-After=%q (store down at answer: %v)", res.StatusCode, res.Header.Get("Retry-After"), down))
					}
				default:
					o.Probes++
					o.OK++
				}
			}()
		}
		wg.Wait()
	}
}

func (r *round) anyRun() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.runs {
		return id
	}
	return ""
}

// checkOutage fails the round when the API answered an outage with
// anything but 503 + Retry-After more than rarely (an injected store
// fault, or a probe that raced the store's restart, may be another 5xx).
func (r *round) checkOutage() {
	o := r.rep.Outage
	if n := o.Unavailable + o.Other; n > 0 && o.Other*10 > n {
		r.rep.fail("while the store was down %d of %d failing probes were not 503 with Retry-After (e.g. %v)", o.Other, n, o.Examples)
	}
}

// countOutageLogs counts the API instances' log lines about store
// failures, by message.
func (r *round) countOutageLogs() map[string]int {
	msgs := map[string]string{
		"claims_back_off":   `msg="the store is failing; waiting claims back off`,
		"store_unreachable": `msg="store unreachable"`,
		"store_error":       `msg="store error"`,
	}
	out := map[string]int{}
	for _, p := range r.apis {
		b, err := os.ReadFile(filepath.Join(r.cfg.Dir, p.name+".log"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			for k, m := range msgs {
				if strings.Contains(line, m) {
					out[k]++
				}
			}
		}
	}
	return out
}

// checkOutageLogs fails the round when the API instances logged a store
// outage per request instead of summarising it: each instance logs the
// first unreachable answer, then at most one line per 10 s, and its claim
// path one line when an outage starts. The bound allows every process
// start (an API killed and restarted logs anew) a line per store outage
// and one per 10 s of the round; one line per request — 1,260 lines in a
// 12 s round before the summary — is far above it.
func (r *round) checkOutageLogs() {
	downs := r.rep.Kills[KindStore] + r.rep.Pauses[KindStore]
	if downs == 0 {
		return
	}
	starts := len(r.apis) + r.rep.Kills[KindAPI]
	limit := starts * (downs + 2 + int(r.cfg.Duration/(10*time.Second)))
	// The claim path takes any failure after an answer for an outage's
	// start, an injected fault included.
	f := r.rep.Faults
	injected := int(f.Error + f.Conflict + f.Throttle + f.Lost)
	for k, max := range map[string]int{"store_unreachable": limit, "claims_back_off": limit + injected} {
		if n := r.rep.OutageLogs[k]; n > max {
			r.rep.fail("the API instances logged %d %s lines for %d store outages (at most %d expected): an outage is logged per request", n, k, downs, max)
		}
	}
}

// storeChaos takes the store process down on its own seeded schedule,
// about StoreEvery after it last came back: kill -9 (7 in 10) or SIGSTOP,
// for up to 3 s, then restart or resume it. (Picked like the other processes it went
// down every few seconds and MinIO, slow to start on a loaded machine,
// was down most of a round.)
func (r *round) storeChaos(ctx context.Context) {
	if r.store == nil {
		return
	}
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 3))
	every := int64(r.cfg.StoreEvery)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(every/2 + rng.Int64N(every))):
		}
		down := time.Duration(rng.Int64N(int64(3 * time.Second)))
		kill := rng.Float64() < 0.7
		if kill {
			r.store.kill()
			r.count(r.rep.Kills, KindStore)
		} else if r.store.pause() {
			r.count(r.rep.Pauses, KindStore)
		}
		select {
		case <-ctx.Done():
		case <-time.After(down):
		}
		// The next outage is counted from when the store serves again: a
		// restart on a loaded machine takes MinIO seconds, and outages
		// closer than that keep it down for good.
		r.reviveStore(ctx)
	}
}

// reviveStore restarts (or resumes) the store process and waits until it
// serves. A start is given as long as it makes progress: on a loaded
// machine MinIO, niced like everything the tests start, took minutes of
// wall clock for its half second of CPU before it listened, and killing
// such a start after 20 s and starting again made it never serve (the
// "hung" restarts of docs/RELIABILITY.md). Only a start whose CPU time
// stands still for storeStall (or that runs past storeStartMax) is taken
// for hung: it is sent SIGABRT — the store runs with GOTRACEBACK=crash,
// so its log gets every goroutine's stack — then killed and started again.
// A start that exits (a port taken meanwhile, say) is started again at once.
func (r *round) reviveStore(ctx context.Context) {
	for try := 1; ctx.Err() == nil; try++ {
		if err := r.store.ensure(); err != nil {
			r.logf("chaos: restart the store: %v", err)
		}
		t0 := time.Now()
		err := r.waitStore(ctx)
		if err == nil {
			r.tl.mark(r.store.name, true) // serving: the liveness check counts from here
			r.mu.Lock()
			r.rep.StoreStartMax = max(r.rep.StoreStartMax, time.Since(t0))
			r.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.rep.StoreHangs++
		r.mu.Unlock()
		r.logf("chaos: the store does not serve after a restart (try %d): %v; dumping its goroutines (SIGABRT, see %s.log), killing it and starting again", try, err, r.store.name)
		r.store.abort(5 * time.Second)
	}
}

// How long a store start may go without using CPU, and in all, before it
// is taken for hung.
const (
	storeStall    = 20 * time.Second
	storeStartMax = 5 * time.Minute
)

// waitStore waits until the store process serves, it exits, it makes no
// progress (CPU time) for storeStall, or storeStartMax passes.
func (r *round) waitStore(ctx context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	start := time.Now()
	lastCPU, lastMove := r.store.cpuTime(), start
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res, err := hc.Get(r.cfg.StoreProc.Health); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		if !r.store.alive() {
			return fmt.Errorf("it exited after %v (see %s.log)", time.Since(start).Round(time.Millisecond), r.store.name)
		}
		if cpu := r.store.cpuTime(); cpu != lastCPU {
			lastCPU, lastMove = cpu, time.Now()
		}
		switch {
		case time.Since(lastMove) > storeStall:
			return fmt.Errorf("no CPU used for %v (%v in all, %v since start)", storeStall, lastCPU, time.Since(start).Round(time.Millisecond))
		case time.Since(start) > storeStartMax:
			return fmt.Errorf("not serving %v after start (%v CPU)", storeStartMax, lastCPU)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// count adds one to a per-kind counter of the report.
func (r *round) count(m map[Kind]int, k Kind) {
	r.mu.Lock()
	m[k]++
	r.mu.Unlock()
}
