package gate

import (
	"testing"
	"time"
)

// A window's outcome: a debounce takes every event not after its last
// (by publish time, then id) and runs the last; a batch runs chunks of
// max_size in publish order and takes only what they hold.
func TestOutcome(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	w := window{prefix: "gates/abc/", n: 3}
	keys := []string{w.eventKey(t0, "a"), w.eventKey(t0.Add(time.Millisecond), "b"), w.eventKey(t0.Add(2*time.Millisecond), "c")}

	sizes := map[string]int64{keys[0]: 10, keys[1]: 10, keys[2]: 10}
	w.open = opening{Kind: Debounce}
	f := w.outcome(keys, sizes, 1000)
	if f.Last != keys[2] || len(f.Runs) != 1 {
		t.Fatalf("debounce outcome %+v", f)
	}
	if !f.has(t0, "late-but-older") || !f.has(t0.Add(2*time.Millisecond), "c") || f.has(t0.Add(3*time.Millisecond), "newer") {
		t.Fatal("a debounce takes what is not after its last, and only that")
	}
	if (&fired{}).has(t0, "a") {
		t.Fatal("an empty window took an event")
	}

	w.open = opening{Kind: Batch, MaxSize: 2}
	f = w.outcome(keys, sizes, 1000)
	if len(f.Runs) != 2 || len(f.Runs[0]) != 2 || f.Runs[1][0] != keys[2] {
		t.Fatalf("batch outcome %+v", f)
	}
	if g := w.outcome(keys, sizes, 15); len(g.Runs) != 3 {
		t.Fatalf("a batch over the input limit is cut: %+v", g)
	}
	if !f.has(t0.Add(time.Hour), "b") || f.has(t0, "d") {
		t.Fatal("a batch takes the ids its runs hold, and only those")
	}
	if at, ok := eventTime(keys[1]); !ok || !at.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("eventTime %v %v", at, ok)
	}
}
