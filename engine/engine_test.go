package engine

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
)

func newTestEngine(t testing.TB, store *blob.Bucket, cfg Config) *Engine {
	t.Helper()
	if store == nil {
		store = mem.New()
	}
	if cfg.KeyLayout == "" {
		// CAIRN_TEST_KEY_LAYOUT=sharded runs the suite on the sharded layout.
		cfg.KeyLayout = os.Getenv("CAIRN_TEST_KEY_LAYOUT")
	}
	e, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func linear(name, version string, n int) cairn.Workflow {
	w := cairn.Workflow{Name: name, Version: version}
	for i := range n {
		s := cairn.Step{ID: stepName(i)}
		if i > 0 {
			s.After = []string{w.Steps[i-1].ID}
			s.Input = json.RawMessage(`{"prev": "${steps.` + w.Steps[i-1].ID + `.output}", "n": "${input.n + ` + strconv.Itoa(i) + `}"}`)
		}
		w.Steps = append(w.Steps, s)
	}
	return w
}

// stepName is "sa", "sb", … "sz", "sba", …
func stepName(i int) string {
	name := ""
	for {
		name = string(rune('a'+i%26)) + name
		i /= 26
		if i == 0 {
			return "s" + name
		}
	}
}

func register(t testing.TB, e *Engine, worker string, wfs ...cairn.Workflow) {
	t.Helper()
	if _, err := e.Register(context.Background(), cairn.RegisterRequest{WorkerID: worker, Workflows: wfs}); err != nil {
		t.Fatal(err)
	}
}

func TestLinearRunEndToEnd(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w1", linear("lin", "1", 3)))
	ctx, e := h.ctx, h.e
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lin", Input: json.RawMessage(`{"n": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Run.ID
	for i := 0; i < 3; i++ {
		leases, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w1", Max: 4, WaitMs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		if len(leases) != 1 {
			t.Fatalf("step %d: got %d leases, want 1", i, len(leases))
		}
		l := leases[0]
		t.Logf("lease %s input %s", l.Step, l.Input)
		if i > 0 {
			var in struct {
				Prev string `json:"prev"`
				N    int    `json:"n"`
			}
			if err := json.Unmarshal(l.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.N != 1+i || in.Prev != "out-"+string(rune('a'+i-1)) {
				t.Fatalf("rendered input %s", l.Input)
			}
		}
		if _, err := e.Started(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal("out-" + l.Step[1:])
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: out, StatePatch: map[string]json.RawMessage{l.Step: []byte("true")}}); err != nil {
			t.Fatal(err)
		}
		// A repeated complete is already_applied.
		_, err = e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: out})
		if reason, _ := IsRejection(err); reason != cairn.ReasonAlreadyApplied {
			t.Fatalf("repeated complete: %v, want already_applied", err)
		}
	}
	r, err := e.GetRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != cairn.RunCompleted || string(r.Output) != `"out-c"` || len(r.State) != 3 {
		t.Fatalf("run = %s output %s state %v", r.Status, r.Output, r.State)
	}
	j, err := e.Journal(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range j {
		t.Logf("%s %s %s %d %s", x.At.Format(time.StampMilli), x.Type, x.Step, x.Attempt, x.Worker)
	}
}
