package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// The timeline draws one bar per attempt — a lost lease and a retry
// included — a running attempt held now, and a sleep as its own bar; the
// graph puts a step one column right of its deepest dependency.
func TestLayout(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	run := &cairn.Run{ID: "r", CreatedAt: t0, Steps: []cairn.StepView{
		{ID: "a", Kind: cairn.KindTask, Status: cairn.StepCompleted, Attempt: 3, Attempts: []cairn.Attempt{
			{N: 1, Worker: "w1", ClaimedAt: at(0), StartedAt: at(1), EndedAt: at(3), Outcome: cairn.OutcomeLost},
			{N: 2, Worker: "w2", ClaimedAt: at(4), EndedAt: at(5), Outcome: cairn.OutcomeFailed, Error: &cairn.ErrorInfo{Class: "retryable", Message: "503"}},
			{N: 3, Worker: "w2", ClaimedAt: at(6), EndedAt: at(7), Outcome: cairn.OutcomeCompleted},
		}},
		{ID: "nap", Kind: cairn.KindSleep, Status: cairn.StepCompleted},
		{ID: "b", Kind: cairn.KindTask, Status: cairn.StepReady, Attempt: 1, Holder: &cairn.Holder{Worker: "w3", ClaimedAt: *at(9)}},
	}}
	journal := []cairn.JournalEntry{
		{At: *at(7), Type: cairn.JournalSleepStarted, Step: "nap"},
		{At: *at(8), Type: cairn.JournalStepCompleted, Step: "nap"},
	}
	tl := layoutTimeline(run, journal, *at(10))
	want := []struct {
		label, kind, class string
		queue              bool
	}{
		{"a #1", "attempt", "lost", true}, {"a #2", "attempt", "failed", false}, {"a #3", "attempt", "completed", false},
		{"nap", "sleep", "completed", false}, {"b #1", "attempt", "running", false},
	}
	if len(tl.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(tl.Rows), len(want), tl.Rows)
	}
	for i, w := range want {
		r := tl.Rows[i]
		if r.Label != w.label || r.Kind != w.kind || r.Class != w.class || r.HasQueue != w.queue {
			t.Errorf("row %d: %+v, want %+v", i, r, w)
		}
	}
	// 10s over 900px: attempt 2 runs from 4s to 5s.
	if r := tl.Rows[1]; r.X != tlLabel+360 || r.BW != 90 {
		t.Errorf("attempt 2 at x=%d width %d, want %d, 90", r.X, r.BW, tlLabel+360)
	}
	if r := tl.Rows[0]; r.QX != tlLabel || r.QW != 90 || r.X != tlLabel+90 {
		t.Errorf("attempt 1 queued %d+%d, span at %d", r.QX, r.QW, r.X)
	}

	def := &cairn.Workflow{Steps: []cairn.Step{{ID: "a"}, {ID: "nap", After: []string{"a"}}, {ID: "b", After: []string{"a", "nap"}}}}
	g := layoutGraph(def, run)
	cols := map[string]int{}
	for _, n := range g.Nodes {
		cols[n.ID] = (n.X - 10) / (nodeW + colGap)
	}
	if cols["a"] != 0 || cols["nap"] != 1 || cols["b"] != 2 || len(g.Edges) != 3 {
		t.Fatalf("columns %v, %d edges", cols, len(g.Edges))
	}
}

// Map and child steps have their bars (from map_started / child_started
// to their end, or now), every bar says how long it lasted, and a
// definition's compensation steps are drawn in a band below its graph.
func TestLayoutMapChildAndCompensation(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	run := &cairn.Run{ID: "r", CreatedAt: t0, Steps: []cairn.StepView{
		{ID: "fan", Kind: cairn.KindMap, Status: cairn.StepCompleted, Map: &cairn.MapProgress{Total: 3, Completed: 3}},
		{ID: "sub", Kind: cairn.KindChild, Status: cairn.StepChildRunning, Child: "c1"},
		{ID: "undo", Kind: cairn.KindTask, Status: cairn.StepPending},
	}}
	journal := []cairn.JournalEntry{
		{At: *at(1), Type: cairn.JournalMapStarted, Step: "fan"},
		{At: *at(4), Type: cairn.JournalStepCompleted, Step: "fan"},
		{At: *at(5), Type: cairn.JournalChildStarted, Step: "sub"},
	}
	tl := layoutTimeline(run, journal, *at(10))
	if len(tl.Rows) != 2 {
		t.Fatalf("%d rows, want the map's and the child's: %+v", len(tl.Rows), tl.Rows)
	}
	fan, sub := tl.Rows[0], tl.Rows[1]
	if fan.Kind != "map" || fan.Running || fan.Dur != "3.0s" || fan.X != tlLabel+90 || fan.BW != 270 {
		t.Errorf("map row %+v, want 1s→4s, 3s", fan)
	}
	if sub.Kind != "child" || !sub.Running || sub.Dur != "5.0s" || sub.X+sub.BW != tlLabel+tlPlot {
		t.Errorf("child row %+v, want 5s→now, running", sub)
	}

	def := &cairn.Workflow{
		Steps:     []cairn.Step{{ID: "fan", Kind: cairn.KindMap}, {ID: "sub", Kind: cairn.KindChild, After: []string{"fan"}}},
		OnFailure: []cairn.Step{{ID: "undo"}},
	}
	g := layoutGraph(def, run)
	var undo *gnode
	for i := range g.Nodes {
		if g.Nodes[i].ID == "undo" {
			undo = &g.Nodes[i]
		}
	}
	if undo == nil || g.CompY == 0 || undo.Y <= g.CompY || undo.Kind != cairn.KindTask {
		t.Fatalf("compensation band at %d, undo %+v", g.CompY, undo)
	}
	for _, n := range g.Nodes {
		if n.ID != "undo" && n.Y+n.H > g.CompY {
			t.Errorf("node %s (y %d) overlaps the compensation band at %d", n.ID, n.Y, g.CompY)
		}
	}
}

// An edge that skips columns runs through the gap between rows, never
// under a node of a column it crosses.
func TestLongEdgesAvoidNodes(t *testing.T) {
	def := &cairn.Workflow{Steps: []cairn.Step{
		{ID: "a"}, {ID: "b", After: []string{"a"}}, {ID: "b2", After: []string{"a"}}, {ID: "c", After: []string{"b", "b2"}},
		{ID: "d", After: []string{"c", "a"}}, // a → d skips two columns
	}}
	g := layoutGraph(def, &cairn.Run{})
	var long string
	for _, e := range g.Edges {
		if strings.Contains(e.D, "H") {
			long = e.D
		}
	}
	if long == "" {
		t.Fatalf("no edge routed through a lane: %+v", g.Edges)
	}
	// The lane's y is the C's second control point's y before H.
	var x1, y1, c1x, c1y, c2x, lane, ax, ay, hx int
	if _, err := fmt.Sscanf(long, "M%d %d C%d %d %d %d %d %d H%d", &x1, &y1, &c1x, &c1y, &c2x, &lane, &ax, &ay, &hx); err != nil {
		t.Fatalf("%s: %v", long, err)
	}
	for _, n := range g.Nodes {
		if n.X > x1 && n.X+n.W < hx+colGap && lane >= n.Y && lane <= n.Y+n.H {
			t.Errorf("the lane at y=%d passes under %s (y %d–%d)", lane, n.ID, n.Y, n.Y+n.H)
		}
	}
}

// A function's operations get rows under its attempts: a step from the
// record before it to its result (an at_most_once one from its start), a
// sleep to its end, a wait from its start to its event (or now); values
// get none.
func TestLayoutFunctionOperations(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	p := func(s int) *time.Time { v := at(s); return &v }
	ops := []cairn.Operation{
		{ID: "/now#0", Kind: cairn.OpValue, Status: cairn.OpCompleted, At: at(1)},
		{ID: "/a#0", Kind: cairn.OpStep, Status: cairn.OpCompleted, At: at(2)},
		{ID: "/pay#0", Kind: cairn.OpStep, Status: cairn.OpStarted, At: at(2)},
		{ID: "/pay#0", Kind: cairn.OpStep, Status: cairn.OpFailed, At: at(3), Error: &cairn.ErrorInfo{Class: "x"}},
		{ID: "/nap#0", Kind: cairn.OpSleep, Status: cairn.OpCompleted, At: at(3), WakeAt: p(5)},
		{ID: "/ok#0", Kind: cairn.OpWait, Status: cairn.OpStarted, At: at(6)},
	}
	run := &cairn.Run{ID: "r", CreatedAt: t0, Steps: []cairn.StepView{{ID: "main", Kind: cairn.KindFunction, Status: cairn.StepReady, Attempt: 3,
		Operations: ops, Attempts: []cairn.Attempt{
			{N: 1, ClaimedAt: p(0), EndedAt: p(3), Outcome: cairn.OutcomeSuspended},
			{N: 2, ClaimedAt: p(5), EndedAt: p(6), Outcome: cairn.OutcomeSuspended},
		}}}}
	tl := layoutTimeline(run, nil, at(10))
	var got []string
	for _, r := range tl.Rows {
		got = append(got, fmt.Sprintf("%s %s %s %d+%d", strings.TrimSpace(r.Label), r.Kind, r.Class, (r.X-tlLabel)/90, r.BW/90))
	}
	want := []string{"main #1 attempt suspended 0+3", "main #2 attempt suspended 5+1",
		"/a#0 attempt completed 1+1", "/pay#0 attempt failed 2+1", "/nap#0 sleep completed 3+2", "/ok#0 wait running 6+4"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
