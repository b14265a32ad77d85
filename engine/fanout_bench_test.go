package engine

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
)

var fanoutWide = flag.Int("fanout-wide", 2000, "BenchmarkFanout: the wide fan-out's width (the narrow one is a tenth of it)")

// BenchmarkFanout runs one run of W parallel steps (a static fan-out)
// with 32 in-process workers claiming and completing with eager
// dispatch, on the in-memory store, at two widths (-fanout-wide, 2,000
// by default, and a tenth of it), and reports per step: the process's
// CPU time, the wall time and blob requests, for each width, and the
// ratio of the wide to the narrow CPU time per step. A per-step cost
// that grows with the width (the whole run record decoded, scanned or
// encoded per step) shows as a ratio well above 1; group commit
// amortizes the record's decode and encode over the completes in flight,
// so the ratio stays small while the width is within a few hundred times
// the workers:
//
//	go test ./engine -run '^$' -bench BenchmarkFanout -benchtime 1x [-fanout-wide 10000]
func BenchmarkFanout(b *testing.B) {
	wide := *fanoutWide
	narrow := max(wide/10, 1)
	var cpu, wall, reqs [2]float64
	// One measurement whatever b.N (make bench runs every benchmark
	// 200x): a fan-out of thousands is its own average.
	for range 1 {
		for i, width := range []int{narrow, wide} {
			c, w, r := fanoutOnce(b, width, 32)
			cpu[i] += c
			wall[i] += w
			reqs[i] += r
		}
	}
	n := 1.0
	for i, width := range []int{narrow, wide} {
		b.ReportMetric(cpu[i]/n, fmt.Sprintf("cpu-us/step@%d", width))
		b.ReportMetric(wall[i]/n, fmt.Sprintf("wall-us/step@%d", width))
		b.ReportMetric(reqs[i]/n, fmt.Sprintf("requests/step@%d", width))
	}
	b.ReportMetric(cpu[1]/cpu[0], "cpu-ratio")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fanoutWorkflow(name string, width int) cairn.Workflow {
	w := cairn.Workflow{Name: name, Version: "1"}
	for i := range width {
		w.Steps = append(w.Steps, cairn.Step{ID: fmt.Sprintf("f%05d", i)})
	}
	return w
}

// fanoutOnce runs one width-wide fan-out to completion and returns its
// CPU and wall microseconds and blob requests per step.
func fanoutOnce(b testing.TB, width, workers int) (cpu, wall, reqs float64) {
	ctx := context.Background()
	store, counts := counting.Wrap(mem.New())
	e := newTestEngine(b, store, Config{})
	wf := fanoutWorkflow("fan", width)
	for i := range workers {
		register(b, e, fmt.Sprintf("w%d", i), wf)
	}
	runtime.GC()
	counts.Reset()
	t0, c0 := time.Now(), cpuTime()
	id := mustStart(b, e, "fan", `{}`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wid := fmt.Sprintf("w%d", i)
			var next []cairn.Lease
			for {
				mu.Lock()
				fin := done >= width
				mu.Unlock()
				if fin {
					return
				}
				if len(next) == 0 {
					ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: wid, Max: 1, WaitMs: 200})
					if err != nil {
						b.Error(err)
						return
					}
					next = ls
					continue
				}
				l := next[0]
				next = next[1:]
				ended, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), ClaimNext: &cairn.ClaimNext{Max: 1}})
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				done++
				mu.Unlock()
				next = append(next, ended.Leases...)
			}
		}()
	}
	wg.Wait()
	d, c := time.Since(t0), cpuTime()-c0
	if r := getRun(b, e, id); r.Status != cairn.RunCompleted {
		b.Fatalf("run %s: %s", id, r.Status)
	}
	w := float64(width)
	return float64(c.Microseconds()) / w, float64(d.Microseconds()) / w, float64(counts.Snapshot().Total()) / w
}
