package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// awaitCompleted waits until every run of ids is completed; at within, or
// when a run ends otherwise, it returns a diagnosis of each run that is not
// (diagnoseRun), which the caller fails the test with once its goroutines
// stopped: a wait that ends silently reports a symptom later, not the
// stuck step. "" means every run completed.
// It waits through the engine's own long poll (AwaitRun), not a sleep loop.
func awaitCompleted(t testing.TB, e *Engine, ids []string, within time.Duration) (diagnosis string) {
	t.Helper()
	deadline := time.Now().Add(within)
	left := slices.Clone(ids)
	for len(left) > 0 {
		var still []string
		for _, id := range left {
			if r := getRun(t, e, id); !r.Status.Terminal() {
				still = append(still, id)
			} else if r.Status != cairn.RunCompleted {
				return fmt.Sprintf("run %s ended %s, want completed:\n%s", id, r.Status, diagnoseRun(t, e, id))
			}
		}
		left = still
		if len(left) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			fmt.Fprintf(&b, "%d of %d runs not completed after %v:\n", len(left), len(ids), within)
			for i, id := range left {
				if i == 5 {
					fmt.Fprintf(&b, "… and %d more\n", len(left)-5)
					break
				}
				b.WriteString(diagnoseRun(t, e, id))
			}
			return b.String()
		}
		// Held until the first run left ends (the engine's own long poll),
		// at most half a second: then the others are looked at again.
		_, _ = e.AwaitRun(context.Background(), left[0], min(time.Until(deadline), 500*time.Millisecond)+time.Millisecond)
	}
	return ""
}

// diagnoseRun describes why a run may be stuck: its status, each step that
// is not done with its attempt and that attempt's lease (or its absence),
// the run's timers in the index, and the last journal entries.
func diagnoseRun(t testing.TB, e *Engine, id string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	r, err := e.GetRun(ctx, id)
	if err != nil {
		return fmt.Sprintf("run %s: %v\n", id, err)
	}
	rec, _ := e.readRun(ctx, id)
	rev := int64(-1)
	if rec != nil {
		rev = rec.Rev
	}
	fmt.Fprintf(&b, "run %s (%s@%s): %s, rev %d\n", id, r.Workflow, r.Version, r.Status, rev)
	for _, s := range r.Steps {
		if s.Status == cairn.StepCompleted || s.Status == cairn.StepSkipped {
			continue
		}
		fmt.Fprintf(&b, "  step %s: %s, attempt %d", s.ID, s.Status, s.Attempt)
		if s.Status == cairn.StepReady && s.Attempt > 0 && rec != nil {
			o, err := e.store.Get(ctx, e.keys.LeaseOf(rec.Layout, rec.ID, s.ID, s.Attempt))
			switch {
			case isNotFound(err):
				b.WriteString(", no lease (unclaimed)")
			case err != nil:
				fmt.Fprintf(&b, ", lease unreadable: %v", err)
			default:
				fmt.Fprintf(&b, ", lease %s", o.Data)
			}
		}
		b.WriteString("\n")
	}
	if ts, err := e.store.ListAll(ctx, e.keys.TimersPrefix()); err == nil {
		n := 0
		for _, a := range ts {
			if strings.Contains(a.Key, id) {
				fmt.Fprintf(&b, "  timer %s\n", a.Key)
				n++
			}
		}
		if n == 0 {
			b.WriteString("  no timer in the index\n")
		}
	}
	if j, err := e.Journal(ctx, id); err == nil {
		from := max(0, len(j)-15)
		for _, x := range j[from:] {
			fmt.Fprintf(&b, "  %s %s %s #%d %s %s\n", x.At.Format("15:04:05.000"), x.Type, x.Step, x.Attempt, x.Worker, x.Message)
		}
	}
	return b.String()
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
