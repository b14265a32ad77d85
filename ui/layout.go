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

func layoutGraph(def *cairn.Workflow, run *cairn.Run) *graph {
	type stepInfo struct {
		id    string
		kind  cairn.StepKind
		after []string
	}
	var steps []stepInfo
	if def != nil {
		for _, s := range def.Steps {
			steps = append(steps, stepInfo{s.ID, s.EffectiveKind(), s.After})
		}
	} else {
		for _, s := range run.Steps {
			steps = append(steps, stepInfo{id: s.ID, kind: s.Kind})
		}
	}
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
	g := &graph{}
	rows := map[int]int{}
	pos := map[string]*gnode{}
	for _, s := range steps {
		d := depth[s.id]
		n := gnode{ID: s.id, Kind: s.kind, X: 10 + d*(nodeW+colGap), Y: 10 + rows[d]*(nodeH+rowGap), W: nodeW, H: nodeH}
		n.TX, n.TY = n.X+8, n.Y+nodeH/2+5
		if st := run.Step(s.id); st != nil {
			n.Status = st.Status
			if m := st.Map; m != nil {
				n.Note = fmt.Sprintf("%d/%d", m.Completed+m.Failed, m.Total)
			}
		}
		rows[d]++
		g.Nodes = append(g.Nodes, n)
		pos[s.id] = &g.Nodes[len(g.Nodes)-1]
		g.W = max(g.W, n.X+nodeW+10)
		g.H = max(g.H, n.Y+nodeH+10)
	}
	for _, s := range steps {
		to := pos[s.id]
		for _, a := range s.after {
			from := pos[a]
			if from == nil || to == nil {
				continue
			}
			x1, y1, x2, y2 := from.X+from.W, from.Y+from.H/2, to.X, to.Y+to.H/2
			mid := (x1 + x2) / 2
			g.Edges = append(g.Edges, gedge{D: fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, mid, y1, mid, y2, x2, y2)})
		}
	}
	return g
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
)

func layoutTimeline(run *cairn.Run, journal []cairn.JournalEntry, now time.Time) *timeline {
	t0 := run.CreatedAt
	t1 := now
	if run.EndedAt != nil {
		t1 = *run.EndedAt
	}
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Millisecond
	}
	x := func(t time.Time) int {
		f := float64(t.Sub(t0)) / float64(span)
		f = min(max(f, 0), 1)
		return tlLabel + int(f*tlPlot)
	}
	end := func(p *time.Time) time.Time {
		if p != nil {
			return *p
		}
		return t1
	}
	// When each wait or sleep began and ended, from the journal.
	began, ended := map[string]time.Time{}, map[string]time.Time{}
	for _, j := range journal {
		switch j.Type {
		case cairn.JournalWaitStarted, cairn.JournalSleepStarted:
			began[j.Step] = j.At
		case cairn.JournalStepCompleted, cairn.JournalStepFailed:
			ended[j.Step] = j.At
		}
	}
	tl := &timeline{W: tlLabel + tlPlot + 10, Label: tlLabel}
	y := 24
	add := func(r trow) {
		r.Y, r.TY = y, y+tlRow/2+4
		if r.BW < 2 {
			r.BW = 2
		}
		tl.Rows = append(tl.Rows, r)
		y += tlRow
	}
	for _, s := range run.Steps {
		switch s.Kind {
		case cairn.KindWait, cairn.KindSleep:
			b, ok := began[s.ID]
			if !ok {
				continue
			}
			e, done := ended[s.ID]
			if !done {
				e = t1
			}
			add(trow{Label: s.ID, Step: s.ID, Kind: string(s.Kind), Class: string(s.Status), X: x(b), BW: x(e) - x(b), Running: !done,
				Title: fmt.Sprintf("%s %s: %s → %s", s.Kind, s.ID, b.UTC().Format(time.RFC3339Nano), tsOr(done, e))})
			continue
		}
		for _, a := range s.Attempts {
			if a.ClaimedAt == nil {
				continue
			}
			r := trow{Label: fmt.Sprintf("%s #%d", s.ID, a.N), Step: s.ID, Attempt: a.N, Kind: "attempt", Class: string(a.Outcome)}
			if a.Outcome == "" {
				r.Class, r.Running = "running", true
			}
			start := *a.ClaimedAt
			if a.StartedAt != nil {
				r.HasQueue, r.QX, r.QW = true, x(*a.ClaimedAt), x(*a.StartedAt)-x(*a.ClaimedAt)
				start = *a.StartedAt
			}
			r.X, r.BW = x(start), x(end(a.EndedAt))-x(start)
			r.Title = fmt.Sprintf("%s attempt %d by %s: claimed %s", s.ID, a.N, a.Worker, a.ClaimedAt.UTC().Format(time.RFC3339Nano))
			if a.StartedAt != nil {
				r.Title += ", started " + a.StartedAt.UTC().Format(time.RFC3339Nano)
			}
			if a.EndedAt != nil {
				r.Title += ", ended " + a.EndedAt.UTC().Format(time.RFC3339Nano) + " " + string(a.Outcome)
			}
			if a.Error != nil {
				r.Title += ": " + a.Error.Class + ": " + a.Error.Message
			}
			add(r)
		}
		// The attempt held now is in a lease, not yet in the record.
		if s.Holder != nil && (len(s.Attempts) == 0 || s.Attempts[len(s.Attempts)-1].N != s.Attempt) {
			r := trow{Label: fmt.Sprintf("%s #%d", s.ID, s.Attempt), Step: s.ID, Attempt: s.Attempt, Kind: "attempt", Class: "running", Running: true}
			start := s.Holder.ClaimedAt
			if s.Holder.StartedAt != nil {
				r.HasQueue, r.QX, r.QW = true, x(start), x(*s.Holder.StartedAt)-x(start)
				start = *s.Holder.StartedAt
			}
			r.X, r.BW = x(start), x(t1)-x(start)
			r.Title = fmt.Sprintf("%s attempt %d held by %s since %s", s.ID, s.Attempt, s.Holder.Worker, s.Holder.ClaimedAt.UTC().Format(time.RFC3339Nano))
			add(r)
		}
	}
	tl.H = y + 6
	for i := 0; i <= 4; i++ {
		at := t0.Add(span * time.Duration(i) / 4)
		anchor := "start"
		if i == 4 {
			anchor = "end"
		}
		tl.Ticks = append(tl.Ticks, tick{X: x(at), TY: 14, Label: "+" + fmtDur(at.Sub(t0)), Anchor: anchor})
	}
	return tl
}

func tsOr(done bool, t time.Time) string {
	if !done {
		return "now"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
