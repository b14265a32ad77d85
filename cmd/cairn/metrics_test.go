package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
)

// cairn dev --metrics serves the engine's metrics for Prometheus at
// /metrics, beside the API; without the flag there is no such path.
func TestDevServesMetrics(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Setenv("CAIRN_BLOB", "mem://")
		root := newRootCmd()
		args := []string{"dev", "--addr", "127.0.0.1:0", "--log-level", "error"}
		if on {
			args = append(args, "--metrics")
		}
		root.SetArgs(args)
		var out, logs syncBuffer
		root.SetOut(&out)
		root.SetErr(&logs)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx) }()
		re := regexp.MustCompile(`API on (http://\S+)/v1/api`)
		var base string
		t.Cleanup(cancel)
		testutil.Eventually(t, 10*time.Second, "cairn dev's banner", func() (bool, string) {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				base = m[1]
			}
			return base != "", out.String() + "\n" + logs.String()
		})
		if base == "" {
			cancel()
			t.Fatalf("no banner:\n%s\n%s", out.String(), logs.String())
		}
		// One API call that reads the bucket.
		resp, err := http.Get(base + "/v1/api/runs")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if on {
			for _, want := range []string{
				`cairn_blob_requests_total{class="put",op="list"`,
				`cairn_api_request_duration_seconds_count{op="listRuns",`,
			} {
				if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
					t.Errorf("/metrics: %d, no %s in\n%s", resp.StatusCode, want, body)
				}
			}
		} else if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/metrics without --metrics: %d, want 404", resp.StatusCode)
		}
		if strings.Contains(logs.String(), "level=INFO") {
			t.Errorf("--log-level error still logs info:\n%s", logs.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("dev stopped with %v", err)
		}
	}
}
