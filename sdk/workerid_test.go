package sdk

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Two unnamed Workers of one process (TestMapItemFailureOverHTTP runs
// one per version) must not share a worker id: the engine keeps one
// record per id, so the second registration replaced the first's served
// workflows; the first's next claim then leased the second's steps, failed
// them as unservable, and the engine avoided that id — both workers — for
// UnservableAvoid (30 s): map items sat ready for up to a minute.
func TestUnnamedWorkersDoNotShareAnID(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	one := Workflow("shared", "1").Task("t", Handle(func(StepContext, struct{}) (string, error) { return "one", nil }))
	two := Workflow("shared", "2").Task("t", Handle(func(StepContext, struct{}) (string, error) { return "two", nil }))
	var aClaims atomic.Int64 // claims a's server answered
	hc := interceptClient(func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err == nil && isCall(r, "/steps/claim") {
			aClaims.Add(1)
		}
		return resp, err
	})
	a := NewWorker(e.client(t, WithHTTPClient(hc)), WithLogger(quiet()), WithClaimWait(50*time.Millisecond)).Register(one)
	b := NewWorker(e.c, WithLogger(quiet())).Register(two)
	if a.ID() == b.ID() {
		t.Errorf("two unnamed workers share the id %s", a.ID())
	}
	serve(t, a)
	// b registers (shared@2) and stops: from now on only a claims, and
	// it does not serve shared@2.
	if err := serve(t, b)(); err != nil {
		t.Fatal(err)
	}
	run := start(t, e.c, "shared", StartOptions{Version: "2"}).ID
	from := aClaims.Load()
	eventually(t, 10*time.Second, "ten of a's claims answered after the start", func() bool { return aClaims.Load() >= from+10 })
	j, err := e.c.Journal(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range j {
		if strings.Contains(en.Message, "does not serve") {
			t.Errorf("worker %s was leased a step of shared@2, which it does not serve: %s %s", en.Worker, en.Type, en.Message)
		}
	}
	// b again: it must get the step at once, not after an avoidance.
	serve(t, b)
	if r := waitRun(t, e.c, run, 5*time.Second); r.Status != RunCompleted || string(r.Output) != `"two"` {
		t.Fatalf("run %s %s", r.Status, r.Output)
	}
}
