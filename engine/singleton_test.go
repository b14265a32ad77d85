package engine

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn"
)

// A singleton workflow in skip mode starts one run per key however many
// starts race for it (on two instances): the others answer the running
// run, skipped; once it ends the key is free again; another key is not
// held by it.
func TestSingletonSkip(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		register(t, e, "w", cairn.Workflow{Name: "sync", Version: "1", Singleton: &cairn.Singleton{Key: "${input.customer}", Mode: cairn.SingletonSkip},
			Steps: []cairn.Step{{ID: "a"}}})
		peers := []*Engine{e, h.peer()}
		start := func(i int, customer string) *cairn.StartResult {
			res, err := peers[i%2].StartRun(ctx, cairn.StartRequest{Workflow: "sync", Input: json.RawMessage(`{"customer":"` + customer + `"}`)})
			if err != nil {
				t.Error(err)
				return nil
			}
			return res
		}
		results := make([]*cairn.StartResult, 8)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i] = start(i, "c1") })
		}
		wg.Wait()
		ids := map[string]bool{}
		started := 0
		for _, r := range results {
			if r == nil {
				t.FailNow()
			}
			ids[r.Run.ID] = true
			if !r.Skipped {
				started++
			}
		}
		if len(ids) != 1 || started != 1 {
			t.Fatalf("8 racing starts made runs %v (%d not skipped), want one", ids, started)
		}
		if other := start(0, "c2"); other == nil || other.Skipped {
			t.Fatalf("another key was held: %+v", other)
		}
		for id := range ids {
			if _, err := e.CancelRun(ctx, id, "done"); err != nil {
				t.Fatal(err)
			}
			if next := start(1, "c1"); next == nil || next.Skipped || next.Run.ID == id {
				t.Fatalf("the key was not freed by its run's end: %+v", next)
			}
		}
	})
}

// In cancel_running mode a start cancels the run holding its key.
func TestSingletonCancelRunning(t *testing.T) {
	h := newHarness(t)
	register(t, h.e, "w", cairn.Workflow{Name: "latest", Version: "1", Singleton: &cairn.Singleton{Mode: cairn.SingletonCancelRunning},
		Steps: []cairn.Step{{ID: "a"}}})
	first := mustStart(t, h.e, "latest", `{}`)
	second := mustStart(t, h.e, "latest", `{}`)
	if r := getRun(t, h.e, first); r.Status != cairn.RunCancelled {
		t.Fatalf("the first run is %s, want cancelled", r.Status)
	}
	if r := getRun(t, h.e, second); r.Status != cairn.RunRunning {
		t.Fatalf("the second run is %s", r.Status)
	}
}
