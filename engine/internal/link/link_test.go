package link

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
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

// canceller records the runs it cancels; those in ended are a conflict
// (already ended).
type canceller struct {
	mu        sync.Mutex
	cancelled []string
	ended     map[string]bool
}

func (c *canceller) cancel(_ context.Context, run, reason string) (*cairn.Run, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended[run] {
		return nil, &errs.ConflictError{Message: "run " + run + " ended"}
	}
	c.cancelled = append(c.cancelled, run+": "+reason)
	return nil, nil
}

func TestAfterEnd(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	now := func(f func()) { f() } // run the background work at once
	c := &canceller{ended: map[string]bool{"c2": true}}
	toParent := 0
	AfterEnd(now, time.Second, log, Ended{ID: "p", Status: cairn.RunFailed, Parent: &Parent{Run: "gp"}, Children: []string{"c1", "c2"}},
		func(context.Context) error { toParent++; return errors.New("store down") }, c.cancel)
	if toParent != 1 || len(c.cancelled) != 1 || c.cancelled[0] != "c1: parent run p ended (failed)" {
		t.Fatalf("applied to the parent %d times, cancelled %v; want once, and c1", toParent, c.cancelled)
	}
	if !strings.Contains(logs.String(), "applying the child's end to its parent failed") || strings.Contains(logs.String(), "cancelling a child run failed") {
		t.Fatalf("logged:\n%s\nwant the parent's failure only (a child that ended already is no failure)", logs.String())
	}
	AfterEnd(func(func()) { t.Fatal("background work for a run with no links") }, time.Second, log, Ended{ID: "x"}, nil, nil)
}

func TestCheckParent(t *testing.T) {
	ctx := context.Background()
	status := map[string]cairn.RunStatus{"running": cairn.RunRunning, "done": cairn.RunCompleted}
	state := func(_ context.Context, run string) (string, cairn.RunStatus, error) {
		if st, ok := status[run]; ok {
			return "w", st, nil
		}
		return "", "", &errs.NotFoundError{What: "run", ID: run}
	}
	c := &canceller{ended: map[string]bool{"late": true}}
	for _, parent := range []string{"running", "gone"} {
		if err := CheckParent(ctx, "child", parent, state, c.cancel); err != nil || len(c.cancelled) != 0 {
			t.Fatalf("parent %s: %v, cancelled %v; want nothing done", parent, err, c.cancelled)
		}
	}
	if err := CheckParent(ctx, "child", "done", state, c.cancel); err != nil || len(c.cancelled) != 1 || c.cancelled[0] != "child: parent run done ended (completed)" {
		t.Fatalf("parent ended: %v, cancelled %v; want the child cancelled", err, c.cancelled)
	}
	if err := CheckParent(ctx, "late", "done", state, c.cancel); err != nil {
		t.Fatalf("a child that ended already: %v; want no error", err)
	}
}
