package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// clock is a settable clock for tests that need leases to expire.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().UTC()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func mustStart(t testing.TB, e *Engine, wf string, input string) string {
	t.Helper()
	req := StartRequest{Workflow: wf}
	if input != "" {
		req.Input = json.RawMessage(input)
	}
	res, err := e.StartRun(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Run.ID
}

func claimOne(t testing.TB, e *Engine, worker string) Lease {
	t.Helper()
	ls, err := e.Claim(context.Background(), ClaimRequest{WorkerID: worker, Max: 1, WaitMs: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 {
		t.Fatalf("claim by %s got %d leases, want 1", worker, len(ls))
	}
	return ls[0]
}

func wantReason(t testing.TB, err error, reason cairn.Reason) {
	t.Helper()
	got, ok := IsRejection(err)
	if !ok || got != reason {
		t.Fatalf("got %v, want a %s rejection", err, reason)
	}
}

// awaitCompleted polls until every run of ids is completed or within has
// passed (the caller checks the statuses after).
func awaitCompleted(t testing.TB, e *Engine, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		done := 0
		for _, id := range ids {
			if getRun(t, e, id).Status == cairn.RunCompleted {
				done++
			}
		}
		if done == len(ids) || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getRun(t testing.TB, e *Engine, id string) *cairn.Run {
	t.Helper()
	r, err := e.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Steps {
		for _, a := range s.Attempts {
			if a.Outcome != "" && !slices.Contains(a.Outcome.Values(), a.Outcome) {
				t.Fatalf("step %s attempt %d: outcome %q is not in the vocabulary", s.ID, a.N, a.Outcome)
			}
		}
	}
	return r
}

func stepOf(r *cairn.Run, id string) cairn.StepView {
	for _, s := range r.Steps {
		if s.ID == id {
			return s
		}
	}
	return cairn.StepView{}
}

func countJournal(t testing.TB, e *Engine, run string, typ cairn.JournalType, step string) int {
	t.Helper()
	j, err := e.Journal(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range j {
		if !slices.Contains(x.Type.Values(), x.Type) {
			t.Fatalf("journal type %q is not in the vocabulary", x.Type)
		}
		if x.Type == typ && (step == "" || x.Step == step) {
			n++
		}
	}
	return n
}

func single(name string, s cairn.Step) cairn.Workflow {
	if s.ID == "" {
		s.ID = "only"
	}
	return cairn.Workflow{Name: name, Version: "1", Steps: []cairn.Step{s}}
}

func isNotFoundAPI(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}
