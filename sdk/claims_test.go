package sdk

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestClaimPause: a server that holds claims briefly and asks for a pause
// between empty ones (CAIRN_CLAIM_HOLD, CAIRN_CLAIM_PAUSE: Lambda's
// defaults) gets a few claims a period from an idle worker instead of one
// per hold, and the worker still picks up work that becomes ready while
// it pauses. Against the same hold without a pause, the worker claims
// again at once (the control: what the pause saves).
func TestClaimPause(t *testing.T) {
	const hold, pause, idleFor = 200 * time.Millisecond, 1500 * time.Millisecond, 4 * time.Second
	claimsWhileIdle := func(t *testing.T, pause time.Duration) (int64, *env, *Client) {
		e := newEnv(t, sdktest.Options{Engine: engine.Config{ClaimHold: hold, ClaimPause: pause}})
		var claims atomic.Int64
		hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/steps/claim") {
				claims.Add(1)
			}
			return next.RoundTrip(r)
		})
		wc := e.client(t, WithHTTPClient(hc))
		d := Workflow("paused", "1").Task("a", Handle(func(StepContext, struct{}) (int, error) { return 1, nil }))
		serve(t, NewWorker(wc, WithConcurrency(1), WithLogger(quiet())).Register(d))
		time.Sleep(idleFor)
		return claims.Load(), e, wc
	}
	t.Run("pause", func(t *testing.T) {
		t.Parallel()
		n, e, _ := claimsWhileIdle(t, pause)
		// Pauses start at 1 s and double to 1.5 s, each 1/2 to all of
		// it: 4 s idle is 2 to 5 claims of 200 ms.
		if n < 2 || n > 5 {
			t.Fatalf("%d claims in %v idle with a %v hold and a %v pause; want 2 to 5", n, idleFor, hold, pause)
		}
		t.Logf("idle worker, %v hold, %v pause: %d claims in %v", hold, pause, n, idleFor)
		// Work that becomes ready while the worker pauses is picked up by
		// its next claim: within a pause and a hold.
		began := time.Now()
		r := start(t, e.c, "paused", StartOptions{})
		if got := waitRun(t, e.c, r.ID, 10*time.Second); got.Status != RunCompleted {
			t.Fatalf("run %s", got.Status)
		}
		if took := time.Since(began); took > pause+hold+time.Second {
			t.Fatalf("run took %v; want at most the pause %v + the hold %v (+1 s)", took, pause, hold)
		}
	})
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		n, _, _ := claimsWhileIdle(t, 0)
		if n < 10 {
			t.Fatalf("%d claims in %v idle with a %v hold and no pause; want about one per hold", n, idleFor, hold)
		}
		t.Logf("idle worker, %v hold, no pause: %d claims in %v", hold, n, idleFor)
	})
}
