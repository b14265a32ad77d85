//go:build !cairn_lambda

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
