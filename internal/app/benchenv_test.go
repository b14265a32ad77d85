package app

import "testing"

// TestBenchEnvSet: the benchmark hook a Lambda build refuses is named
// (benchstore_lambda.go); none set is none named.
func TestBenchEnvSet(t *testing.T) {
	for _, k := range []string{EnvBenchStats, EnvBenchProfile, EnvBenchScale} {
		t.Setenv(k, "")
	}
	if got := benchEnvSet(); got != "" {
		t.Fatalf("none set: %q", got)
	}
	for _, k := range []string{EnvBenchScale, EnvBenchProfile, EnvBenchStats} {
		t.Setenv(k, "1")
		if got := benchEnvSet(); got != k {
			t.Fatalf("%s set: named %q", k, got)
		}
	}
}
