package gate

import (
	"strings"
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

// A window's outcome names every event it listed (the runs' events, a
// debounce's superseded ones): their markers go with the window. A
// sweep's timer name is told from an instance's by its tag.
func TestGateOutcomeNamesItsIDs(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	w := window{prefix: "gates/abc/", n: 3, open: opening{Kind: Debounce}}
	ids := []string{"a", "b", "c"}
	var keys []string
	for i, id := range ids {
		keys = append(keys, w.eventKey(t0.Add(time.Duration(i)*time.Millisecond), id))
	}
	f := w.outcome(keys, nil, 1000)
	if len(f.Superseded) != 2 || f.Superseded[0] != idHash("a") || f.Superseded[1] != idHash("b") || hashOf(f.Last) != idHash("c") {
		t.Fatalf("debounce outcome %+v: want a and b superseded, c last", f)
	}
	if markKey(w.prefix, idHash("a")) != idKey(w.prefix, "a") {
		t.Fatal("an event's marker is not found from its hash")
	}
	w.open = opening{Kind: Batch, MaxSize: 2}
	if f := w.outcome(keys, nil, 1000); len(f.Superseded) != 0 {
		t.Fatalf("batch outcome %+v: its runs name its events", f)
	}

	g := New(Host{})
	for name, sweep := range map[string]bool{g.timerName(w): false, g.sweepName(w): true} {
		id, ok := TimerID(name)
		if !ok {
			t.Fatalf("%s: not a window's timer", name)
		}
		prefix, n, tag, err := g.parseTimerID(id)
		if err != nil || prefix != w.prefix || n != 3 || strings.HasPrefix(tag, sweepTag) != sweep {
			t.Fatalf("%s: %q %d %q %v", name, prefix, n, tag, err)
		}
	}
}
