package ui

import (
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
)

// graph is a workflow's DAG laid out in columns by depth (a step is one
// column right of its deepest dependency), drawn as SVG.
type graph struct {
	W, H  int
	Nodes []gnode
	Edges []gedge
	// CompY is where the compensation band's label is (0: no band).
	CompY int
}

type gnode struct {
	ID     string
	Kind   cairn.StepKind
	Status cairn.StepStatus
	// Note is a map step's progress (done/total).
	Note   string
	X, Y   int
	W, H   int
	TX, TY int
}

type gedge struct{ D string }

const (
	nodeW, nodeH = 150, 30
	colGap       = 50
	rowGap       = 14
)

// graphStep is a step as the graph draws it.
type graphStep struct {
	id    string
	kind  cairn.StepKind
	after []string
}

// layoutGraph lays out the definition's steps and, below them, its
// compensation (on_failure) steps as a band of their own; without the
// definition, the run's steps in one column.
func layoutGraph(def *cairn.Workflow, run *cairn.Run) *graph {
	g := &graph{}
	if def == nil {
		var steps []graphStep
		for _, s := range run.Steps {
			steps = append(steps, graphStep{id: s.ID, kind: s.Kind})
		}
		g.band(steps, run, 10)
		return g
	}
	var steps, comp []graphStep
	for _, s := range def.Steps {
		steps = append(steps, graphStep{s.ID, s.EffectiveKind(), s.After})
	}
	for _, s := range def.OnFailure {
		comp = append(comp, graphStep{s.ID, s.EffectiveKind(), s.After})
	}
	g.band(steps, run, 10)
	if len(comp) > 0 {
		g.CompY = g.H + 8
		g.band(comp, run, g.CompY+18)
	}
	return g
}

// band lays out steps in columns by depth from y down, with their edges.
func (g *graph) band(steps []graphStep, run *cairn.Run, y int) {
	depth := map[string]int{}
	// Definitions are validated acyclic; iterate to a fixed point, bounded.
	for range len(steps) + 1 {
		changed := false
		for _, s := range steps {
			d := 0
			for _, a := range s.after {
				if depth[a]+1 > d {
					d = depth[a] + 1
				}
			}
			if d != depth[s.id] {
				depth[s.id], changed = d, true
			}
		}
		if !changed {
			break
		}
	}
	rows := map[int]int{}
	pos := map[string]gnode{}
	for _, s := range steps {
		d := depth[s.id]
		n := gnode{ID: s.id, Kind: s.kind, X: 10 + d*(nodeW+colGap), Y: y + rows[d]*(nodeH+rowGap), W: nodeW, H: nodeH}
		n.TX, n.TY = n.X+8, n.Y+nodeH/2+5
		if st := run.Step(s.id); st != nil {
			n.Status = st.Status
			if m := st.Map; m != nil {
				n.Note = fmt.Sprintf("%d/%d", m.Completed+m.Failed, m.Total)
			}
			if st.Cached != nil {
				n.Note = "(cached)"
			}
		}
		rows[d]++
		g.Nodes = append(g.Nodes, n)
		pos[s.id] = n
		g.W = max(g.W, n.X+nodeW+10)
		g.H = max(g.H, n.Y+nodeH+10)
	}
	for _, s := range steps {
		to, ok := pos[s.id]
		for _, a := range s.after {
			from, found := pos[a]
			if !ok || !found {
				continue
			}
			x1, y1, x2, y2 := from.X+from.W, from.Y+from.H/2, to.X, to.Y+to.H/2
			if to.X-from.X <= nodeW+colGap {
				mid := (x1 + x2) / 2
				g.Edges = append(g.Edges, gedge{D: fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, mid, y1, mid, y2, x2, y2)})
				continue
			}
			// Across columns: through the gap above the higher of the two
			// rows, which no node of any column covers, not under the nodes
			// of the columns between.
			lane := min(from.Y, to.Y) - rowGap/2
			a, b := x1+colGap/2, x2-colGap/2
			g.Edges = append(g.Edges, gedge{D: fmt.Sprintf("M%d %d C%d %d %d %d %d %d H%d C%d %d %d %d %d %d",
				x1, y1, a, y1, x1, lane, a, lane, b, x2, lane, b, y2, x2, y2)})
		}
	}
}

// timeline places one bar per attempt of each task step (claimed →
// started → ended) and one per wait or sleep on the run's time axis.
type timeline struct {
	W, H  int
	Label int
	Rows  []trow
	Ticks []tick
}

type trow struct {
	Y, TY    int
	Label    string
	Step     string
	Attempt  int
	Kind     string // attempt, wait, sleep
	Class    string // outcome or status
	Title    string
	QX, QW   int // claimed → started
	X, BW    int // started (or claimed) → ended
	Running  bool
	HasQueue bool
	// Dur is how long the bar lasted (so far, when Running), written at
	// DX beside it (before it, DAnchor end, when it reaches the right).
	Dur     string
	DX      int
	DAnchor string
}

type tick struct {
	X, TY  int
	Label  string
	Anchor string
}

const (
	tlPlot  = 900
	tlLabel = 190
	tlRow   = 22
	tlTop   = 24 // the first row's y, below the ticks' labels
)

// layoutTimeline lays out the timeline of run: a row per wait or sleep
// that began, per recorded attempt that was claimed and per attempt held
// now, on an axis from the run's creation to its end (or now).
func layoutTimeline(run *cairn.Run, journal []cairn.JournalEntry, now time.Time) *timeline {
	ax := newTimeAxis(run, now)
	began, ended := waitTimes(journal)
	tl := &timeline{W: tlLabel + tlPlot + 10, Label: tlLabel}
	for _, s := range run.Steps {
		switch s.Kind {
		case cairn.KindWait, cairn.KindSleep, cairn.KindMap, cairn.KindChild:
			if b, ok := began[s.ID]; ok {
				tl.add(waitRow(s, b, ended, ax))
			}
			continue
		}
		for _, a := range s.Attempts {
			if a.ClaimedAt == nil {
				continue
			}
			tl.add(attemptRow(s.ID, a, ax))
		}
		// The attempt held now is in a lease, not yet in the record.
		if s.Holder != nil && (len(s.Attempts) == 0 || s.Attempts[len(s.Attempts)-1].N != s.Attempt) {
			tl.add(heldRow(s, ax))
		}
		for _, r := range opRows(s, ax) {
			tl.add(r)
		}
	}
	tl.H = tlTop + len(tl.Rows)*tlRow + 6
	tl.Ticks = ax.ticks()
	return tl
}

// add places r in the next row, its bar at least 2 wide.
func (tl *timeline) add(r trow) {
	y := tlTop + len(tl.Rows)*tlRow
	r.Y, r.TY = y, y+tlRow/2+4
	if r.BW < 2 {
		r.BW = 2
	}
	r.DX = r.X + r.BW + 4
	if r.DX > tlLabel+tlPlot-40 {
		r.DX, r.DAnchor = r.X-4, "end"
	} else {
		r.DAnchor = "start"
	}
	tl.Rows = append(tl.Rows, r)
}

// timeAxis maps the run's time, from its creation to its end (or now),
// onto the plot.
type timeAxis struct {
	t0, t1 time.Time
	span   time.Duration
}

func newTimeAxis(run *cairn.Run, now time.Time) timeAxis {
	ax := timeAxis{t0: run.CreatedAt, t1: now}
	if run.EndedAt != nil {
		ax.t1 = *run.EndedAt
	}
	ax.span = ax.t1.Sub(ax.t0)
	if ax.span <= 0 {
		ax.span = time.Millisecond
	}
	return ax
}

// x is t's x on the plot, clamped to it.
func (ax timeAxis) x(t time.Time) int {
	f := float64(t.Sub(ax.t0)) / float64(ax.span)
	f = min(max(f, 0), 1)
	return tlLabel + int(f*tlPlot)
}

// end is *p, or the axis' end when p is nil (not ended yet).
func (ax timeAxis) end(p *time.Time) time.Time {
	if p != nil {
		return *p
	}
	return ax.t1
}

// ticks are the axis' five ticks: its start, quarters and end.
func (ax timeAxis) ticks() []tick {
	var ticks []tick
	for i := 0; i <= 4; i++ {
		at := ax.t0.Add(ax.span * time.Duration(i) / 4)
		anchor := "start"
		if i == 4 {
			anchor = "end"
		}
		ticks = append(ticks, tick{X: ax.x(at), TY: 14, Label: "+" + fmtDur(at.Sub(ax.t0)), Anchor: anchor})
	}
	return ticks
}

// waitTimes reads from the journal when each wait, sleep, map or child
// step began and ended.
func waitTimes(journal []cairn.JournalEntry) (began, ended map[string]time.Time) {
	began, ended = map[string]time.Time{}, map[string]time.Time{}
	for _, j := range journal {
		switch j.Type {
		case cairn.JournalWaitStarted, cairn.JournalSleepStarted, cairn.JournalMapStarted, cairn.JournalChildStarted:
			if _, ok := began[j.Step]; !ok {
				began[j.Step] = j.At
			}
		case cairn.JournalStepCompleted, cairn.JournalStepFailed:
			ended[j.Step] = j.At
		}
	}
	return began, ended
}

// waitRow is the row of wait, sleep, map or child step s, which began at
// b: from b to its end in the journal (or now).
func waitRow(s cairn.StepView, b time.Time, ended map[string]time.Time, ax timeAxis) trow {
	e, done := ended[s.ID]
	if !done {
		e = ax.t1
	}
	return trow{Label: s.ID, Step: s.ID, Kind: string(s.Kind), Class: string(s.Status), X: ax.x(b), BW: ax.x(e) - ax.x(b), Running: !done, Dur: fmtDur(e.Sub(b)),
		Title: fmt.Sprintf("%s %s: %s → %s", s.Kind, s.ID, b.UTC().Format(time.RFC3339Nano), tsOr(done, e))}
}

// attemptRow is the row of a recorded attempt of step: queued from its
// claim to its start, then running to its end (or now).
func attemptRow(step string, a cairn.Attempt, ax timeAxis) trow {
	r := trow{Label: fmt.Sprintf("%s #%d", step, a.N), Step: step, Attempt: a.N, Kind: "attempt", Class: string(a.Outcome)}
	if a.Outcome == "" {
		r.Class, r.Running = "running", true
	}
	start := *a.ClaimedAt
	if a.StartedAt != nil {
		r.HasQueue, r.QX, r.QW = true, ax.x(*a.ClaimedAt), ax.x(*a.StartedAt)-ax.x(*a.ClaimedAt)
		start = *a.StartedAt
	}
	r.X, r.BW = ax.x(start), ax.x(ax.end(a.EndedAt))-ax.x(start)
	r.Dur = fmtDur(ax.end(a.EndedAt).Sub(start))
	r.Title = fmt.Sprintf("%s attempt %d by %s: claimed %s", step, a.N, a.Worker, a.ClaimedAt.UTC().Format(time.RFC3339Nano))
	if a.StartedAt != nil {
		r.Title += ", started " + a.StartedAt.UTC().Format(time.RFC3339Nano)
	}
	if a.EndedAt != nil {
		r.Title += ", ended " + a.EndedAt.UTC().Format(time.RFC3339Nano) + " " + string(a.Outcome)
	}
	if a.Error != nil {
		r.Title += ": " + a.Error.Class + ": " + a.Error.Message
	}
	return r
}

// heldRow is the row of the attempt of s its holder runs now, which is in
// its lease and not yet in the run's record.
func heldRow(s cairn.StepView, ax timeAxis) trow {
	r := trow{Label: fmt.Sprintf("%s #%d", s.ID, s.Attempt), Step: s.ID, Attempt: s.Attempt, Kind: "attempt", Class: "running", Running: true}
	start := s.Holder.ClaimedAt
	if s.Holder.StartedAt != nil {
		r.HasQueue, r.QX, r.QW = true, ax.x(start), ax.x(*s.Holder.StartedAt)-ax.x(start)
		start = *s.Holder.StartedAt
	}
	r.X, r.BW = ax.x(start), ax.x(ax.t1)-ax.x(start)
	r.Dur = fmtDur(ax.t1.Sub(start))
	r.Title = fmt.Sprintf("%s attempt %d held by %s since %s", s.ID, s.Attempt, s.Holder.Worker, s.Holder.ClaimedAt.UTC().Format(time.RFC3339Nano))
	return r
}

// maxOpRows bounds the rows of one function's operations.
const maxOpRows = 40

// opRows are the rows of a function step's operations (kind
// cairn.KindFunction): a step from the record before it (what was
// checkpointed as its body began) to its result, a sleep to its end, a
// wait or an invoke from its start to its outcome (or now). Recorded
// values and patch markers take no time and get no row.
func opRows(s cairn.StepView, ax timeAxis) []trow {
	var rows []trow
	begun, ended := map[string]time.Time{}, map[string]time.Time{} // by operation id
	for _, op := range s.Operations {
		if op.Status != cairn.OpStarted {
			ended[op.ID] = op.At
		}
	}
	prev := time.Time{}
	if len(s.Attempts) > 0 && s.Attempts[0].ClaimedAt != nil {
		prev = *s.Attempts[0].ClaimedAt
	}
	for _, op := range s.Operations {
		start, end, kind, done := prev, op.At, "attempt", true
		prev = op.At
		switch {
		case op.Status == cairn.OpStarted:
			begun[op.ID] = op.At
			if op.Kind == cairn.OpStep {
				continue // its outcome's row
			}
			start, end, done = op.At, ax.t1, false
			if at, ok := ended[op.ID]; ok {
				end, done = at, true
			}
			kind = map[cairn.OperationKind]string{cairn.OpWait: "wait", cairn.OpInvoke: "child"}[op.Kind]
		case op.Kind == cairn.OpSleep && op.WakeAt != nil:
			start, end, kind = op.At, *op.WakeAt, "sleep"
			done = !end.After(ax.t1)
			end = ax.end(&end)
		case op.Kind != cairn.OpStep:
			continue // a value, a patch, or a wait's or invoke's outcome: in their rows
		}
		if b, ok := begun[op.ID]; ok && op.Kind == cairn.OpStep {
			start = b // an at_most_once step, from its started record
		}
		if len(rows) == maxOpRows {
			rows[len(rows)-1].Label, rows[len(rows)-1].Title = "  …", fmt.Sprintf("%d operations in all: the steps table lists them", len(s.Operations))
			break
		}
		class := string(op.Status)
		if !done {
			class = "running"
		}
		rows = append(rows, trow{Label: "  " + op.ID, Step: s.ID, Kind: kind, Class: class, X: ax.x(start), BW: ax.x(end) - ax.x(start),
			Running: !done, Dur: fmtDur(end.Sub(start)),
			Title: fmt.Sprintf("%s %s of %s: %s → %s", op.Kind, op.ID, s.ID, start.UTC().Format(time.RFC3339Nano), tsOr(done, end))})
	}
	return rows
}

func tsOr(done bool, t time.Time) string {
	if !done {
		return "now"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
