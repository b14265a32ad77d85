// Command ratios reads the result lines of bench/e2e (cairn) and
// bench/compare (a Temporal dev server) from one sitting and prints, per
// workload and cairn target, how cairn compares: throughput and latency
// as multiples of Temporal's, server CPU per step as a fraction. With
// --load it also prints the machine's 1-minute load average sampled during
// the sitting, so the figures are read with the load they were taken at.
//
//	go run ./bench/ratios --load load.txt cairn.txt temporal.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// baseline is the target name bench/compare prints.
const baseline = "temporal-dev"

// line is one workload's result: its target, workload and numeric fields.
type line struct {
	target, workload string
	v                map[string]float64
}

func main() {
	load := flag.String("load", "", "a file of 1-minute load averages sampled during the sitting, one per line")
	flag.Parse()
	if err := run(os.Stdout, *load, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, load string, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("usage: ratios [--load FILE] RESULTS...")
	}
	var ls []line
	for _, f := range files {
		got, err := parseFile(f)
		if err != nil {
			return err
		}
		ls = append(ls, got...)
	}
	base := map[string]line{}
	for _, l := range ls {
		if l.target == baseline {
			base[l.workload] = l
		}
	}
	if len(base) == 0 {
		return fmt.Errorf("no %s lines in %v", baseline, files)
	}
	fmt.Fprintf(w, "# cairn against %s, one sitting: throughput and latency as multiples (× better), server CPU per step as a fraction of Temporal's\n", baseline)
	for _, l := range ls {
		b, ok := base[l.workload]
		if l.target == baseline || !ok {
			continue
		}
		fmt.Fprintf(w, "%-14s %-7s%s\n", l.target, l.workload, compare(l, b))
	}
	if load != "" {
		s, err := loadSummary(load)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "# load average (1 min) during the sitting:", s)
	}
	return nil
}

// compare formats the ratios of cairn's line l to Temporal's line b on
// the fields both have.
func compare(l, b line) string {
	var sb strings.Builder
	if x, y, ok := both(l, b, "steps/s"); ok && y > 0 {
		fmt.Fprintf(&sb, " steps/s=%.0f/%.0f (%.1f×)", x, y, x/y)
	}
	for _, k := range []string{"run_p50_ms", "run_p99_ms", "pickup_p50_ms", "done_p50_ms", "done_p99_ms"} {
		if x, y, ok := both(l, b, k); ok && x > 0 {
			fmt.Fprintf(&sb, " %s=%.1f/%.1f (%.1f× faster)", k, x, y, y/x)
		}
	}
	if x, y, ok := both(l, b, "server_cpu_ms/step"); ok && y > 0 {
		fmt.Fprintf(&sb, " server_cpu_ms/step=%.2f/%.2f (%.3f)", x, y, x/y)
	}
	return sb.String()
}

func both(l, b line, k string) (float64, float64, bool) {
	x, ok1 := l.v[k]
	y, ok2 := b.v[k]
	return x, y, ok1 && ok2
}

func parseFile(name string) ([]line, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ls []line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		l := line{target: fs[0], workload: fs[1], v: map[string]float64{}}
		for _, kv := range fs[2:] {
			k, v, ok := strings.Cut(kv, "=")
			if x, err := strconv.ParseFloat(v, 64); ok && err == nil {
				l.v[k] = x
			}
		}
		ls = append(ls, l)
	}
	return ls, sc.Err()
}

// loadSummary says the min, median and max of the samples in file name.
func loadSummary(name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	var xs []float64
	for _, s := range strings.Fields(string(b)) {
		if x, err := strconv.ParseFloat(s, 64); err == nil {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return "no samples", nil
	}
	slices.Sort(xs)
	return fmt.Sprintf("min %.2f, median %.2f, max %.2f over %d samples", xs[0], xs[len(xs)/2], xs[len(xs)-1], len(xs)), nil
}
