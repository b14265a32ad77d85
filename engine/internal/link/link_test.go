package link

import (
	"encoding/json"
	"testing"

	"github.com/cairn-dev/cairn"
)

func TestUnderCountsDepth(t *testing.T) {
	top := Under("r1", nil, "a", "")
	if top != (Parent{Run: "r1", Step: "a", Depth: 1}) || top.TooDeep() != nil {
		t.Fatalf("under a top-level run: %+v", top)
	}
	if old := Under("r2", &Parent{Run: "r1"}, "b", "op"); old.Depth != 2 || old.Op != "op" {
		t.Fatalf("under a run whose link predates depths: %+v; want depth 2", old)
	}
	deepest := Parent{Depth: MaxDepth - 1}
	if d := Under("r", &deepest, "s", ""); d.Depth != MaxDepth || d.TooDeep() != nil {
		t.Fatalf("at the limit: %+v, %v; want allowed", d, d.TooDeep())
	}
	if d := Under("r", &Parent{Depth: MaxDepth}, "s", ""); d.TooDeep() == nil {
		t.Fatalf("past the limit: %+v; want refused", d)
	}
}

func TestParentJSON(t *testing.T) {
	b, err := json.Marshal(Parent{Run: "r", Step: "s"})
	if err != nil || string(b) != `{"run":"r","step":"s"}` {
		t.Fatalf("%s, %v: the run record's parent field changed", b, err)
	}
}

func TestKeys(t *testing.T) {
	if k := ChildKey("r", "s", 2); k != "child:r:s:2" {
		t.Errorf("child key %q", k)
	}
	if k := InvokeKey("r", "s", "op"); k != "invoke:r:s:op" {
		t.Errorf("invoke key %q", k)
	}
}

func TestChildError(t *testing.T) {
	if why := ChildError("c", cairn.RunCancelled, nil); why.Class != cairn.ClassFatal || why.Message != "child run c cancelled" {
		t.Errorf("no error: %+v", why)
	}
	why := ChildError("c", cairn.RunFailed, &cairn.ErrorInfo{Class: "boom", Message: "it broke"})
	if why.Class != "boom" || why.Message != "child run c failed: it broke" {
		t.Errorf("with an error: %+v", why)
	}
}

func TestEndedIn(t *testing.T) {
	added := []cairn.JournalEntry{{Type: cairn.JournalStepCompleted}, {Type: cairn.JournalRunEnded(cairn.RunCompleted)}}
	if !EndedIn(cairn.RunCompleted, added) || EndedIn(cairn.RunCompleted, added[:1]) {
		t.Fatal("EndedIn: want true only with the run's end among the entries")
	}
}
