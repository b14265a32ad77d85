package engine

import (
	"slices"
	"testing"

	"github.com/cairn-dev/cairn"
)

// Every kind of the vocabulary has its entry in the engine's table, with
// a start, a wake and an active status of its own, or the one it shares
// (sharesActive).
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
		if o, dup := seen[b.active]; dup && sharesActive[k] != o {
			t.Errorf("kinds %s and %s share the active status %s", o, k, b.active)
		}
		seen[b.active] = k
		if activeKinds[b.active] != b && sharesActive[k] == "" {
			t.Errorf("kind %s: activeKinds does not find it by %s", k, b.active)
		}
		// Every optional hook is set exactly where the kind needs it: a
		// due time of its own (fire), work beyond the run record (visit),
		// events (event, for the kinds the root table gives the "event"
		// option). A new kind fails here until it is listed.
		want, ok := optionalHooks[k]
		if !ok {
			t.Errorf("kind %s: list its optional hooks in optionalHooks", k)
			continue
		}
		got := map[string]bool{"fire": b.fire != nil, "visit": b.visit != nil, "event": b.event != nil}
		for hook, set := range got {
			if set != slices.Contains(want, hook) {
				t.Errorf("kind %s: hook %s set = %v, want %v", k, hook, set, !set)
			}
		}
		if takes := k.Takes("event") == nil || k == cairn.KindFunction; takes != (b.event != nil) {
			t.Errorf("kind %s: takes the event option: %v, but has an event hook: %v", k, takes, b.event != nil)
		}
	}
}

// sharesActive names the kind whose active status a kind shares, and so
// its wake and fire: a function's driver is a task attempt.
var sharesActive = map[cairn.StepKind]cairn.StepKind{cairn.KindFunction: cairn.KindTask}

// optionalHooks are the hooks beyond active, start and wake each kind has.
var optionalHooks = map[cairn.StepKind][]string{
	cairn.KindTask:  {},
	cairn.KindWait:  {"fire", "event"},
	cairn.KindSleep: {"fire"},
	cairn.KindMap:   {"visit"},
	cairn.KindChild: {"visit"},
	// A function's waits take events (function.go).
	cairn.KindFunction: {"event", "visit"},
}
