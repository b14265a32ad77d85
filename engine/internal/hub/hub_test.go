package hub

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob/sim"
	"github.com/cairn-dev/cairn/notify"
)

func TestHub(t *testing.T) {
	clk := sim.NewManualClock(time.Now().UTC())
	h := New(clk.Now, 0, nil)
	all := func(notify.Hint) bool { return true }
	onlyA := func(x notify.Hint) bool { return x.Workflow == "a" }

	ch := make(chan struct{}, 1)
	stop := h.Wait(onlyA, ch)
	defer stop()
	h.Add(notify.Hint{Run: "rb", Workflow: "b", Step: "s", Attempt: 1})
	select {
	case <-ch:
		t.Fatal("woken by a hint it does not match")
	default:
	}
	h.Add(notify.Hint{Run: "r1", Workflow: "a", Step: "s", Attempt: 1})
	select {
	case <-ch:
	default:
		t.Fatal("not woken by a matching hint")
	}
	// A newer attempt replaces an older one; an older one is ignored.
	h.Add(notify.Hint{Run: "r1", Workflow: "a", Step: "s", Attempt: 3})
	h.Add(notify.Hint{Run: "r1", Workflow: "a", Step: "s", Attempt: 2})
	got := h.Take(onlyA, 10)
	if len(got) != 1 || got[0].Attempt != 3 {
		t.Fatalf("take = %+v, want attempt 3 only", got)
	}
	if got := h.Take(onlyA, 10); len(got) != 0 {
		t.Fatalf("a hint was handed out twice: %+v", got)
	}
	// Delayed hints are not handed out before their time.
	h.Add(notify.Hint{Run: "r2", Workflow: "a", Step: "s", Attempt: 1, NotBefore: clk.Now().Add(time.Minute)})
	if got := h.Take(onlyA, 10); len(got) != 0 {
		t.Fatalf("delayed hint handed out early: %+v", got)
	}
	clk.Advance(2 * time.Minute)
	if got := h.Take(onlyA, 10); len(got) != 1 {
		t.Fatalf("delayed hint not handed out when due: %+v", got)
	}
	// A taken notice removes the hint.
	h.Add(notify.Hint{Run: "r3", Workflow: "a", Step: "s", Attempt: 1})
	h.Add(notify.Hint{Run: "r3", Workflow: "a", Step: "s", Attempt: 1, Taken: true})
	if got := h.Take(all, 10); len(got) != 1 || got[0].Run != "rb" {
		t.Fatalf("after taken notice: %+v (only the workflow-b hint should remain)", got)
	}
	// take respects n.
	for i := range 5 {
		h.Add(notify.Hint{Run: "x", Workflow: "a", Step: string(rune('a' + i)), Attempt: 1})
	}
	if got := h.Take(all, 2); len(got) != 2 || h.Size() != 3 {
		t.Fatalf("take(2) = %d, left %d", len(got), h.Size())
	}
}
