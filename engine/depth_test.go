package engine

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
)

// A workflow whose child step runs itself nests MaxChildDepth runs deep,
// then the step that would go deeper fails, and the failure climbs back
// to the top run: a recursion without end ends.
func TestChildRecursionIsBounded(t *testing.T) {
	h := newHarness(t, wallClock())
	register(t, h.e, "w", cairn.Workflow{Name: "rec", Version: "1", Steps: []cairn.Step{
		{ID: "again", Kind: cairn.KindChild, Workflow: "rec"},
	}})
	top := mustStart(t, h.e, "rec", `{}`)
	r := awaitRun(t, h.e, top, "failed", func(r *cairn.Run) bool { return r.Status.Terminal() })
	if r.Status != cairn.RunFailed {
		t.Fatalf("the top run %s", r.Status)
	}
	page, err := h.e.ListRuns(h.ctx, ListRequest{Workflow: "rec", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Runs); n != MaxChildDepth+1 {
		t.Fatalf("%d runs, want the top one and %d nested", n, MaxChildDepth)
	}
	deepest := page.Runs[0] // newest first
	d := getRun(t, h.e, deepest.ID)
	if d.Error == nil || !strings.Contains(d.Error.Message, "over the limit of 32") {
		t.Fatalf("the deepest run's error %+v", d.Error)
	}
}
