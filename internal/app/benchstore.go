package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/faults"
)

// The benchmark hooks: read from the process environment only (they are
// not configuration a deployment sets, so internal/config does not list
// them), and inert unless set. The HTTP end-to-end benchmark (bench/e2e)
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

// benchHooks is what the benchmark hooks added to a process.
type benchHooks struct {
	counts *counting.Counts
}

// benchWrap applies the benchmark hooks the environment asks for to b.
func benchWrap(b *blob.Bucket) (*blob.Bucket, *benchHooks, error) {
	h := &benchHooks{}
	switch p := os.Getenv(EnvBenchProfile); p {
	case "", "none":
	case "s3", "gcs":
		scale := 1.0
		if s := os.Getenv(EnvBenchScale); s != "" {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v <= 0 {
				return nil, nil, fmt.Errorf("%s=%q: want a positive number", EnvBenchScale, s)
			}
			scale = v
		}
		prof := faults.S3
		if p == "gcs" {
			prof = faults.GCS
		}
		b, _ = faults.Wrap(b, prof.Scaled(scale))
	default:
		return nil, nil, fmt.Errorf("%s=%q: want s3 or gcs", EnvBenchProfile, p)
	}
	if os.Getenv(EnvBenchStats) == "1" {
		b, h.counts = counting.Wrap(b)
	}
	return b, h, nil
}

// handler serves BenchStatsPath when counting, and next for the rest.
func (h *benchHooks) handler(next http.Handler) http.Handler {
	if h == nil || h.counts == nil {
		return next
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+BenchStatsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h.counts.Snapshot())
	})
	// The server's CPU profile, for bench/e2e --cpuprofile (benchmarks
	// only: served only with CAIRN_BENCH_STATS=1).
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.Handle("/", next)
	return mux
}
