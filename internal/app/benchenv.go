package app

import "os"

// The benchmark hooks: read from the process environment only (they are
// not configuration a deployment sets, so internal/config does not list
// them), and inert unless set; Lambda builds leave them out
// (benchstore_lambda.go refuses them). The HTTP end-to-end benchmark (bench/e2e)
// runs the real `cairn serve` with them to count the blob requests the
// server makes and, optionally, to shape its store like a cloud.
const (
	// EnvBenchStats=1 counts every blob request of the process and serves
	// the counts as JSON at BenchStatsPath (counting.Snapshot).
	EnvBenchStats = "CAIRN_BENCH_STATS"
	// EnvBenchProfile=s3|gcs shapes the store with that latency and
	// write-rate profile (blob/faults); EnvBenchScale scales its time.
	EnvBenchProfile = "CAIRN_BENCH_PROFILE"
	EnvBenchScale   = "CAIRN_BENCH_SCALE"
	// BenchStatsPath is where the counts are served.
	BenchStatsPath = "/debug/cairn/blobcounts"
)

// benchEnvSet names the first benchmark hook set in the environment, or
// is "" when none is.
func benchEnvSet() string {
	for _, k := range []string{EnvBenchStats, EnvBenchProfile, EnvBenchScale} {
		if os.Getenv(k) != "" {
			return k
		}
	}
	return ""
}
