package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn"
)

// Eight parallel steps write the same state keys, their completes sent
// through two instances at once: with reducers every write counts — a sum, an append, a merge, a
// max — whatever order the commits land in; a patch a reducer cannot fold
// is refused naming the key.
func TestStateReducersParallelWriters(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx := h.ctx
		const n = 8
		wf := cairn.Workflow{Name: "fold", Version: "1", Reducers: map[string]cairn.Reducer{
			"total": cairn.ReduceSum, "log": cairn.ReduceAppend, "seen": cairn.ReduceMerge, "best": cairn.ReduceMax,
		}}
		for i := range n {
			wf.Steps = append(wf.Steps, cairn.Step{ID: fmt.Sprintf("s%d", i)})
		}
		register(t, h.e, "w", wf)
		run := mustStart(t, h.e, "fold", `{}`)
		peers := []*Engine{h.e, h.peer()}
		var wg sync.WaitGroup
		errc := make(chan error, n)
		for i := range n {
			e := peers[i%2] // claimed here, completed through either instance
			l := claimOne(t, h.e, "w")
			if i == 0 {
				_, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{StatePatch: map[string]json.RawMessage{"total": json.RawMessage(`"one"`)}})
				var v cairn.ValidationError
				if !errors.As(err, &v) || v[0].Field != "state_patch.total" {
					t.Fatalf("a string for a sum: %v, want an error naming state_patch.total", err)
				}
			}
			wg.Go(func() {
				patch := map[string]json.RawMessage{
					"total": json.RawMessage(`1`),
					"log":   json.RawMessage(fmt.Sprintf(`[%q]`, l.Step)),
					"seen":  json.RawMessage(fmt.Sprintf(`{%q: true}`, l.Step)),
					"best":  json.RawMessage(fmt.Sprint(i)),
				}
				if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), StatePatch: patch}); err != nil {
					errc <- err
				}
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		r := awaitRun(t, h.e, run, "completed", func(r *cairn.Run) bool { return r.Status == cairn.RunCompleted })
		var log []string
		var seen map[string]bool
		_ = json.Unmarshal(r.State["log"], &log)
		_ = json.Unmarshal(r.State["seen"], &seen)
		sort.Strings(log)
		if string(r.State["total"]) != fmt.Sprint(n) || len(log) != n || log[0] != "s0" || log[n-1] != fmt.Sprintf("s%d", n-1) ||
			len(seen) != n || string(r.State["best"]) != fmt.Sprint(n-1) {
			t.Fatalf("state %s %v %v %s, want every write folded", r.State["total"], log, seen, r.State["best"])
		}
	})
}

// Reducers are checked at registration, naming the key.
func TestReducerValidation(t *testing.T) {
	w := cairn.Workflow{Name: "r", Version: "1", Steps: []cairn.Step{{ID: "a"}}, Reducers: map[string]cairn.Reducer{"total": "avg"}}
	err := w.Validate("workflows[0]")
	var v cairn.ValidationError
	if !errors.As(err, &v) || v[0].Field != "workflows[0].reducers.total" {
		t.Fatalf("%v, want an error naming workflows[0].reducers.total", err)
	}
}
