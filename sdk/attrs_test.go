package sdk

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Search attributes set at start and by a step are on the run, and List
// filters on them.
func TestAttributes(t *testing.T) {
	e := newEnv(t, fastReap())
	wf := Workflow("orders", "1").Task("bill", Handle(func(ctx StepContext, _ struct{}) (int, error) {
		return 1, ctx.SetAttributes(map[string]any{"stage": "billed", "vip": nil, "billed_at": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	}))
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(wf))
	a := start(t, e.c, "orders", StartOptions{Attributes: map[string]any{"customer": "acme", "amount": 120.5, "vip": true}})
	b := start(t, e.c, "orders", StartOptions{Attributes: map[string]any{"customer": "acme", "amount": 80}})
	for _, id := range []string{a.ID, b.ID} {
		if r := waitRun(t, e.c, id, 30*time.Second); r.Status != RunCompleted {
			t.Fatalf("run %s: %s", id, r.Status)
		}
	}
	r, err := e.c.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Attributes; string(got["stage"]) != `"billed"` || got["vip"] != nil || string(got["billed_at"]) != `"2026-01-02T03:04:05Z"` {
		t.Fatalf("attributes %s", got)
	}
	ids := func(conds ...string) []string {
		p, err := e.c.List(context.Background(), ListOptions{Attrs: conds, Status: RunCompleted})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range p.Runs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids("customer:acme", "amount>100"); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("customer:acme amount>100: %v, want [%s]", got, a.ID)
	}
	if got := ids("amount<=120.5"); !slices.Equal(got, []string{b.ID, a.ID}) {
		t.Errorf("amount<=120.5: %v, want [%s %s] (by value)", got, b.ID, a.ID)
	}
	if got := ids("billed_at>=2026-01-01T00:00:00Z"); len(got) != 2 {
		t.Errorf("billed_at: %v, want both", got)
	}
}
