package mapstep

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

func TestCountItems(t *testing.T) {
	if n, err := CountItems("m", json.RawMessage(`[1, {"a": 2}, []]`)); n != 3 || err != nil {
		t.Fatalf("an array of 3: %d, %v", n, err)
	}
	for _, out := range []string{`{"a": 1}`, `"[1]"`, `null`, `[` + strings.Repeat("0,", cairn.MaxMapItems) + `0]`} {
		if _, err := CountItems("m", json.RawMessage(out)); err == nil || !strings.HasPrefix(err.Error(), "items of map step m: ") {
			t.Errorf("%.20s: %v; want refused, naming the step", out, err)
		}
	}
}

func TestFailureMessage(t *testing.T) {
	m := New(10, "items")
	m.Failed = 1
	if got := m.FailureMessage(3, "boom", 0); got != "item 3 failed: boom" {
		t.Errorf("one failed: %q", got)
	}
	m.Failed = 3
	if got := m.FailureMessage(7, "boom", 2); got != "3 items failed (tolerated: 2); item 7: boom" {
		t.Errorf("past the tolerated: %q", got)
	}
}

func TestItemsVars(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	if _, err := b.Put(ctx, "items", []byte(`["a","b"]`), blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	x := NewItems(b)
	var vars render.Vars
	if err := x.Vars(ctx, New(2, "items"), "m.1", 1, &vars); err != nil || string(vars.Item) != `"b"` || vars.Index != 1 || !vars.HasItem {
		t.Fatalf("item 1: %v, %+v", err, vars)
	}
	if err := x.Vars(ctx, nil, "m.1", 1, &vars); err == nil {
		t.Fatal("a map step with no items: want an error")
	}
	if err := x.Vars(ctx, New(2, "items"), "m.2", 2, &vars); err == nil {
		t.Fatal("past the items: want an error")
	}
}
