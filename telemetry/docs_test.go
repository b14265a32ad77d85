package telemetry_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/telemetry"
)

// Every metric is documented in docs/OPERATIONS.md with what a healthy
// value looks like.
func TestMetricsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{
		telemetry.MetricRunsStarted, telemetry.MetricRunsEnded, telemetry.MetricAttemptsEnded, telemetry.MetricRetried,
		telemetry.MetricRequeued, telemetry.MetricLost, telemetry.MetricDeadLettered, telemetry.MetricClaims,
		telemetry.MetricLeases, telemetry.MetricClaimHold, telemetry.MetricRejections, telemetry.MetricRequests,
		telemetry.MetricCommitBatch, telemetry.MetricCASRetries, telemetry.MetricReapDuration, telemetry.MetricReapItems,
		telemetry.MetricBlobRequests, telemetry.MetricBlobDuration, telemetry.MetricPublished, telemetry.MetricReceived,
		telemetry.MetricDropped, telemetry.MetricWakeLatency, telemetry.MetricClaimsWaiting,
	} {
		if !strings.Contains(string(doc), "| `"+m+"`") && !strings.Contains(string(doc), "| `"+m+"` (s)") {
			t.Errorf("%s is not in docs/OPERATIONS.md's metrics table", m)
		}
	}
}
