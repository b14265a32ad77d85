package sdk

import (
	"errors"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// A lease id carries the lease's secret nonce: whoever reads it may
// complete the lease with a worker key. The worker's logs name a step by
// run, step and attempt, never by lease id, on every level, the warning
// of a complete it retries included.
func TestLogsNeverCarryALeaseID(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var mu sync.Mutex
	leases := map[string]bool{}
	failed := false
	leasePath := regexp.MustCompile(`/steps/([^/]+)/(complete|fail|heartbeat|started|checkpoint)$`)
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if m := leasePath.FindStringSubmatch(r.URL.Path); m != nil {
			mu.Lock()
			leases[m[1]] = true
			first := m[2] == "complete" && !failed
			failed = failed || first
			mu.Unlock()
			if first { // the first complete breaks off: retried, with a warning
				return nil, errors.New("simulated: connection reset")
			}
		}
		return next.RoundTrip(r)
	})
	logs := &logRecorder{}
	wf := Workflow("leaselog", "1").
		Task("a", Handle(func(StepContext, struct{}) (int, error) { return 1, nil })).
		Task("b", Handle(func(StepContext, struct{}) (int, error) { return 2, nil }), After("a"))
	serve(t, NewWorker(e.client(t, WithHTTPClient(hc)), WithLogger(slogOf(logs))).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "leaselog", StartOptions{}).ID, 20*time.Second)
	if r.Status != RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
	if len(logs.find("retrying")) == 0 {
		logs.dump(t)
		t.Fatal("no warning of the retried complete: the test did not reach the line it is about")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leases) < 2 {
		t.Fatalf("saw %d leases", len(leases))
	}
	for l := range leases {
		if found := logs.find(l); len(found) > 0 {
			t.Errorf("a log line carries a lease id: %s", found[0])
		}
	}
}
