package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRatiosOfOneSitting(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cairn := write("cairn.txt", `# cairn e2e bench
file           linear  runs=200  steps=1000  secs=3.213   steps/s=300     run_p50_ms=2000.00 run_p99_ms=3000.00 server_cpu_ms/step=2.00 get/step=0.40
minio          single  runs=50   steps=50    secs=2.316   steps/s=22      pickup_p50_ms=20.00 pickup_p99_ms=44.42 done_p50_ms=40.00 done_p99_ms=122.44 server_cpu_ms/step=6.00
`)
	temporal := write("temporal.txt", `# temporal
temporal-dev   linear  runs=200  steps=1000  secs=40 steps/s=25       run_p50_ms=30000.00 run_p99_ms=45000.00 server_cpu_ms/step=30.00
temporal-dev   single  runs=50   steps=50    secs=8.546 steps/s=6       pickup_p50_ms=90.00 pickup_p99_ms=317.75 done_p50_ms=160.00 done_p99_ms=364.69 server_cpu_ms/step=48.00
`)
	load := write("load.txt", "1.5\n0.5\n3.0\n")
	var out strings.Builder
	if err := run(&out, load, []string{cairn, temporal}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"file           linear  steps/s=300/25 (12.0×) run_p50_ms=2000.0/30000.0 (15.0× faster) run_p99_ms=3000.0/45000.0 (15.0× faster) server_cpu_ms/step=2.00/30.00 (0.067)",
		"minio          single  steps/s=22/6 (3.7×) pickup_p50_ms=20.0/90.0 (4.5× faster) done_p50_ms=40.0/160.0 (4.0× faster)",
		"min 0.50, median 1.50, max 3.00 over 3 samples",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
	if err := run(&out, "", []string{cairn}); err == nil {
		t.Error("no Temporal lines: want an error")
	}
}
