package engine

import (
	"testing"

	"github.com/cairn-dev/cairn"
)

// Every kind of the vocabulary has its entry in the engine's table, with
// a start, a wake and an active status of its own.
func TestEveryKindHasBehaviour(t *testing.T) {
	kinds := cairn.StepKind("").Values()
	if len(stepKinds) != len(kinds) {
		t.Fatalf("stepKinds has %d entries, the vocabulary %d kinds", len(stepKinds), len(kinds))
	}
	seen := map[cairn.StepStatus]cairn.StepKind{}
	for _, k := range kinds {
		b := stepKinds[k]
		if b == nil || b.start == nil || b.wake == nil {
			t.Fatalf("kind %s: missing or incomplete entry in stepKinds", k)
		}
		if b.active.Done() || b.active == cairn.StepPending || b.active == "" {
			t.Errorf("kind %s: active status %q is not a running one", k, b.active)
		}
		if o, dup := seen[b.active]; dup {
			t.Errorf("kinds %s and %s share the active status %s", o, k, b.active)
		}
		seen[b.active] = k
		if activeKinds[b.active] != b {
			t.Errorf("kind %s: activeKinds does not find it by %s", k, b.active)
		}
	}
}
