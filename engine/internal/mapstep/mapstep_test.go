package mapstep

import (
	"encoding/json"
	"testing"
)

// A shard is written once its last item ends, in index order whatever
// order its items ended in, and dispatch stays within the shard window.
func TestHoldAndLimit(t *testing.T) {
	m := New(ShardSize+1, "items")
	if got := m.Limit(1); got != ShardSize+1 {
		t.Fatalf("Limit(1) = %d, want every item (the window covers both shards)", got)
	}
	for i := ShardSize - 1; i >= 0; i-- {
		k, data, finished := m.Hold(i, json.RawMessage("1"))
		if finished != (i == 0) {
			t.Fatalf("item %d: finished = %v", i, finished)
		}
		if finished {
			var outs []int
			if err := json.Unmarshal(data, &outs); err != nil || k != 0 || len(outs) != ShardSize || m.Shards[0] != Sum(data) {
				t.Fatalf("shard %d: %s (%v), hash %q", k, data, err, m.Shards[0])
			}
		}
	}
	if m.Held != nil {
		t.Fatalf("held outputs left after their shard was written: %v", m.Held)
	}
	if _, data, finished := m.Hold(ShardSize, json.RawMessage("null")); !finished || string(data) != "[null]" {
		t.Fatalf("last shard: %s, finished %v", data, finished)
	}
}
