package mapstep

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// CountItems reads the rendered items of map step (out): an array of at
// most cairn.MaxMapItems elements, whose length it returns. An error says
// why not, for the step's render error.
func CountItems(step string, out json.RawMessage) (int, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(out, &items); err != nil || out[0] != '[' {
		return 0, fmt.Errorf("items of map step %s: rendered %s, not an array", step, render.Clip(string(out)))
	}
	if len(items) > cairn.MaxMapItems {
		return 0, fmt.Errorf("items of map step %s: %d items, over the limit of %d", step, len(items), cairn.MaxMapItems)
	}
	return len(items), nil
}

// FailureMessage is the message of a map step that fails because item
// idx failed (msg: its error's message) with more items failed than
// tolerated.
func (m *State) FailureMessage(idx int, msg string, tolerated int) string {
	if m.Failed > 1 {
		return fmt.Sprintf("%d items failed (tolerated: %d); item %d: %s", m.Failed, tolerated, idx, msg)
	}
	return fmt.Sprintf("item %d failed: %s", idx, msg)
}

// Vars adds element idx of a map's items to vars, for its item step; m is
// the map step's state (nil: it has none).
func (x *Items) Vars(ctx context.Context, m *State, step string, idx int, vars *render.Vars) error {
	if m == nil {
		return fmt.Errorf("map item %s: its map step has no items", step)
	}
	item, err := x.Get(ctx, m.ItemsKey, idx)
	if err != nil {
		return err
	}
	vars.Item, vars.Index, vars.HasItem = item, idx, true
	return nil
}
