package sdk

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestEagerDispatchOneCallPerStep: a busy worker gets its next lease in
// the answer to complete (claim_next) instead of claiming again. A run of
// ten sequential steps on a one-slot worker takes ten completes and no
// more than a couple of claims (the first, and the one held after the
// run ended) — without eager dispatch it takes a claim per step.
func TestEagerDispatchOneCallPerStep(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	var claims, completes atomic.Int64
	var completed atomic.Bool
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/steps/claim"):
			if !completed.Load() {
				claims.Add(1)
			}
		case strings.HasSuffix(r.URL.Path, "/complete"):
			completes.Add(1)
		}
		return next.RoundTrip(r)
	})
	wc := e.client(t, WithHTTPClient(hc))
	const n = 10
	d := Workflow("eager", "1")
	var ran atomic.Int64
	for i := range n {
		var opts []StepOption
		if i > 0 {
			opts = append(opts, After(fmt.Sprintf("s%02d", i-1)))
		}
		d.Task(fmt.Sprintf("s%02d", i), Handle(func(StepContext, struct{}) (int, error) { return int(ran.Add(1)), nil }), opts...)
	}
	serve(t, NewWorker(wc, WithConcurrency(1), WithLogger(quiet())).Register(d))
	r := start(t, e.c, "eager", StartOptions{})
	got := waitRun(t, e.c, r.ID, 30*time.Second)
	completed.Store(true)
	if got.Status != RunCompleted || ran.Load() != n {
		t.Fatalf("run %s, %d bodies ran; want completed, %d", got.Status, ran.Load(), n)
	}
	if c := completes.Load(); c != n {
		t.Fatalf("%d completes, want %d", c, n)
	}
	if c := claims.Load(); c > 3 {
		t.Fatalf("%d claims for %d sequential steps: the completes did not hand the next lease back", c, n)
	}
}
