package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
)

const pageSize = 50

type runsView struct {
	Rows     []engine.RunRow
	Status   string
	Workflow string
	Query    string
	// Attr is the search attribute conditions, separated by spaces
	// (customer:acme amount>100).
	Attr string
	// Since is how far back the listing goes ("" for all time; one of
	// sinceChoices), StartedAfter the time it starts from.
	Since        string
	StartedAfter time.Time
	Statuses     []cairn.RunStatus
	Workflows    []string
	Next         string // URL of the next page, or ""
	First        bool
	Now          time.Time
	FilterNote   string
}

// listRuns reads the runs page's rows: a query that looks like the start
// of a run id lists those runs, else (or when none matches) the runs of
// that correlation.
func (h *Handler) listRuns(ctx context.Context, rv *runsView, cursor string) ([]engine.RunRow, string, error) {
	req := engine.ListRequest{Workflow: rv.Workflow, Status: cairn.RunStatus(rv.Status),
		Correlation: rv.Query, StartedAfter: rv.StartedAfter, Attrs: strings.Fields(rv.Attr), Limit: pageSize, Cursor: cursor}
	if idPrefixRE.MatchString(rv.Query) {
		byID := req
		byID.Correlation, byID.IDPrefix = "", rv.Query
		if rows, next, err := h.e.ListRunRows(ctx, byID); err != nil || len(rows) > 0 || next != "" {
			return rows, next, err
		}
	}
	return h.e.ListRunRows(ctx, req)
}

// idPrefixRE is what the search box takes for the start of a run id.
var idPrefixRE = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{2,25}$`)

// sinceChoices are the runs page's time ranges: runs started in the
// last hour, day or week.
var sinceChoices = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "168h": 7 * 24 * time.Hour}

// runs is the runs page: a filtered, paged table. A query that is a run
// id goes to that run; any other query is a correlation.
func (h *Handler) runs(ctx context.Context, r *http.Request, v *view) (string, error) {
	q := r.URL.Query()
	rv := &runsView{Status: q.Get("status"), Workflow: q.Get("workflow"), Query: strings.TrimSpace(q.Get("q")), Attr: strings.TrimSpace(q.Get("attr")),
		Statuses: cairn.RunStatus("").Values(), First: q.Get("cursor") == "", Now: h.now()}
	v.Title, v.Nav, v.Runs = "Runs", "runs", rv
	if rv.Status != "" && !slices.Contains(rv.Statuses, cairn.RunStatus(rv.Status)) {
		return "", cairn.ValidationError{{Field: "status", Message: "not a run status"}}
	}
	if since := q.Get("since"); since != "" {
		d, ok := sinceChoices[since]
		if !ok {
			return "", cairn.ValidationError{{Field: "since", Message: "one of 1h, 24h, 168h"}}
		}
		rv.Since, rv.StartedAfter = since, rv.Now.Add(-d)
	}
	if rv.Query != "" {
		if _, err := h.e.GetRunStatus(ctx, rv.Query, 0, 0); err == nil {
			rv.Rows = nil
			v.Message = "run " + rv.Query
			// A run id: show that run only.
			rows, err := h.oneRun(ctx, rv.Query)
			if err != nil {
				return "", err
			}
			rv.Rows = rows
			return "runs", nil
		}
	}
	rows, next, err := h.listRuns(ctx, rv, q.Get("cursor"))
	if err != nil {
		return "", err
	}
	rv.Rows = rows
	if next != "" {
		nq := url.Values{}
		for _, k := range []string{"status", "workflow", "q", "since", "attr"} {
			if q.Get(k) != "" {
				nq.Set(k, q.Get(k))
			}
		}
		nq.Set("cursor", next)
		rv.Next = Prefix + "?" + nq.Encode()
		if len(rows) < pageSize {
			rv.FilterNote = "The filter matched fewer runs than fit among the runs read so far; more may follow."
		}
	}
	wfs, err := h.e.ListWorkflows(ctx)
	if err != nil {
		return "", err
	}
	for _, w := range wfs {
		rv.Workflows = append(rv.Workflows, w.Name)
	}
	workers, err := h.e.ListWorkers(ctx)
	if err != nil {
		return "", err
	}
	served := servedBy(workers)
	unserved := map[string]int{}
	for _, row := range rows {
		if row.Status == cairn.RunRunning && !served[row.Workflow+"@"+row.Version] {
			unserved[row.Workflow+"@"+row.Version]++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(unserved)) {
		v.Banners = append(v.Banners, fmt.Sprintf("No live worker serves %s (%d running runs on this page).", k, unserved[k]))
	}
	return "runs", nil
}

func (h *Handler) oneRun(ctx context.Context, id string) ([]engine.RunRow, error) {
	run, err := h.e.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return []engine.RunRow{{RunSummary: cairn.RunSummary{ID: run.ID, Workflow: run.Workflow, Version: run.Version, Status: run.Status,
		CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt, EndedAt: run.EndedAt, StepsDone: run.StepsDone, StepsTotal: run.StepsTotal,
		Error: run.Error, Attributes: run.Attributes}, Correlation: run.Correlation, CostUSD: run.Usage.CostUSD, Priority: run.Priority}}, nil
}

func servedBy(workers []cairn.WorkerInfo) map[string]bool {
	m := map[string]bool{}
	for _, w := range workers {
		if w.Alive {
			for _, wf := range w.Workflows {
				m[wf] = true
			}
		}
	}
	return m
}

func (h *Handler) workers(ctx context.Context, r *http.Request, v *view) (string, error) {
	v.Title, v.Nav = "Workers", "workers"
	ws, err := h.e.ListWorkers(ctx)
	if err != nil {
		return "", err
	}
	v.Workers = ws
	return "workers", nil
}

// workflows is the registered workflows' page.
func (h *Handler) workflows(ctx context.Context, r *http.Request, v *view) (string, error) {
	v.Title, v.Nav = "Workflows", "workflows"
	ws, err := h.e.ListWorkflows(ctx)
	if err != nil {
		return "", err
	}
	v.Workflows = ws
	return "workflows", nil
}

// definitionView is one workflow version's page.
type definitionView struct {
	Def       *cairn.Workflow
	Graph     *graph
	Steps     []defStep
	Schedules []cairn.Schedule
	// MoreSchedules: not every schedule was read (the first page only).
	MoreSchedules bool
}

type defStep struct {
	cairn.Step
	Comp    bool   // an on_failure (compensation) step
	Options string // the step's other fields, as JSON
}

// definition is a workflow version's page: its graph, its steps and their
// options, and the schedules that start it.
func (h *Handler) definition(ctx context.Context, r *http.Request, v *view) (string, error) {
	def, err := h.e.GetWorkflow(ctx, r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		return "", err
	}
	dv := &definitionView{Def: def, Graph: layoutGraph(def, &cairn.Run{})}
	for i, list := range [][]cairn.Step{def.Steps, def.OnFailure} {
		for _, st := range list {
			o := st
			o.ID, o.Kind, o.After = "", "", nil
			b, _ := json.Marshal(o)
			opts := ""
			if string(b) != "{}" {
				opts = pretty(b)
			}
			dv.Steps = append(dv.Steps, defStep{Step: st, Comp: i == 1, Options: opts})
		}
	}
	page, err := h.e.Schedules().List(ctx, 100, "")
	if err != nil {
		return "", err
	}
	for _, s := range page.Schedules {
		if s.Workflow == def.Name && (s.Version == "" || s.Version == def.Version) {
			dv.Schedules = append(dv.Schedules, s)
		}
	}
	dv.MoreSchedules = page.NextCursor != ""
	v.Title, v.Nav, v.Definition = "Workflow "+def.Name+"@"+def.Version, "workflows", dv
	return "workflow", nil
}

// schedules is the schedules' page, 100 at a time.
func (h *Handler) schedules(ctx context.Context, r *http.Request, v *view) (string, error) {
	v.Title, v.Nav = "Schedules", "schedules"
	page, err := h.e.Schedules().List(ctx, 100, r.URL.Query().Get("cursor"))
	if err != nil {
		return "", err
	}
	v.Schedules = page
	return "schedules", nil
}

type runView struct {
	Run      *cairn.Run
	Journal  []cairn.JournalEntry
	Rev      int64
	Live     bool
	Now      time.Time
	Graph    *graph
	Timeline *timeline
	State    template.HTML // valueHTML's: encrypted values as badges
	Input    template.HTML
	Output   template.HTML
	Steps    []stepDetail
	// Awaited is the event the run's first waiting step waits for: the
	// send-event form offers it.
	Awaited string
	// WorkflowFlow is the workflow's own concurrency limits (flow_ui.go).
	WorkflowFlow []string
}

type stepDetail struct {
	cairn.StepView
	OutputText template.HTML // valueHTML's
	// InterruptText is the payload an interrupted step asks with (valueHTML's).
	InterruptText template.HTML
	Flow          string // the step's flow control from the definition (flow_ui.go), or ""
}

// run is a run's page.
func (h *Handler) run(ctx context.Context, r *http.Request, v *view) (string, error) {
	id := r.PathValue("run")
	// The revision first: the page follows changes after it, so it must
	// not be newer than what the page shows (read after the view, a change
	// in between would be taken as seen and the page would never update).
	st, err := h.e.GetRunStatus(ctx, id, 0, 0)
	if err != nil {
		return "", err
	}
	run, err := h.e.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	if err := h.e.Audit(ctx, v.Access.Who, "ui.getRun", id); err != nil {
		return "", err
	}
	journal, err := h.e.Journal(ctx, id)
	if err != nil {
		return "", err
	}
	now := h.now()
	rv := &runView{Run: run, Journal: journal, Rev: st.Rev, Live: !run.Status.Terminal(), Now: now,
		Input: valueHTML(run.Input), Output: valueHTML(run.Output)}
	if len(run.State) > 0 {
		b, _ := json.Marshal(run.State)
		rv.State = valueHTML(b)
	}
	for _, s := range run.Steps {
		rv.Steps = append(rv.Steps, stepDetail{StepView: s, OutputText: valueHTML(s.Output), InterruptText: valueHTML(s.Interrupt)})
		if s.Status == cairn.StepWaiting && rv.Awaited == "" {
			rv.Awaited = s.Event
		}
	}
	var def *cairn.Workflow
	if wf, err := h.e.GetWorkflow(ctx, run.Workflow, run.Version); err == nil {
		def = wf
	}
	addFlow(rv, def)
	rv.Graph = layoutGraph(def, run)
	rv.Timeline = layoutTimeline(run, journal, now)
	v.Title, v.Nav, v.Run = "Run "+run.ID, "runs", rv
	if rv.Live {
		v.Banners = h.unservedSteps(ctx, run, journal, now)
	}
	return "run", nil
}

// unservedSteps names the ready steps no live worker has been able to
// serve for longer than the claim fallback interval.
func (h *Handler) unservedSteps(ctx context.Context, run *cairn.Run, journal []cairn.JournalEntry, now time.Time) []string {
	readySince := map[string]time.Time{}
	for _, j := range journal {
		if j.Type == cairn.JournalStepReady {
			readySince[j.Step] = j.At
		}
	}
	var waiting []string
	for _, s := range run.Steps {
		since, ok := readySince[s.ID]
		if s.ReadyAt != nil {
			since, ok = *s.ReadyAt, true
		}
		if s.Status == cairn.StepReady && s.Holder == nil && ok && now.Sub(since) > h.e.Config().FallbackInterval {
			waiting = append(waiting, s.ID)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	workers, err := h.e.ListWorkers(ctx)
	if err != nil {
		return []string{"Cannot list workers: " + err.Error()}
	}
	wf := run.Workflow + "@" + run.Version
	if servedBy(workers)[wf] {
		return nil
	}
	return []string{fmt.Sprintf("No live worker serves %s: step %s is ready and nobody can claim it.", wf, strings.Join(waiting, ", "))}
}

// maxShown bounds the JSON a page shows of one value.
const maxShown = 64 << 10

func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	// Decoded and encoded again without HTML escapes: the template
	// escapes, and a reader should see "<", not "\u003c".
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if len(raw) > maxShown || d.Decode(&x) != nil || enc.Encode(x) != nil {
		s := string(raw)
		if len(s) > maxShown {
			s = s[:maxShown] + "… (" + strconv.Itoa(len(raw)) + " bytes)"
		}
		return s
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var funcs = template.FuncMap{
	"ts": func(t any) template.HTML {
		var at time.Time
		switch t := t.(type) {
		case time.Time:
			at = t
		case *time.Time:
			if t != nil {
				at = *t
			}
		}
		if at.IsZero() {
			return ""
		}
		return stamp(at)
	},
	"dur": func(from time.Time, to *time.Time, now time.Time) string {
		end := now
		if to != nil {
			end = *to
		}
		return fmtDur(end.Sub(from))
	},
	"attrs": cairn.AttributesText,
	"cost": func(c float64) string {
		if c == 0 {
			return "—"
		}
		return fmt.Sprintf("$%.4f", c)
	},
	"runURL": func(id string) string { return Prefix + "runs/" + url.PathEscape(id) },
	"rfc3339": func(t any) string {
		switch t := t.(type) {
		case time.Time:
			return t.UTC().Format(time.RFC3339Nano)
		case *time.Time:
			if t != nil {
				return t.UTC().Format(time.RFC3339Nano)
			}
		}
		return ""
	},
	"defURL": func(name, version string) string {
		return Prefix + "workflows/" + url.PathEscape(name) + "/" + url.PathEscape(version)
	},
	"join":  strings.Join,
	"usage": cairn.Usage.String,

	"terminal": func(s cairn.RunStatus) bool { return s.Terminal() },
	// brief is a JSON value on one line, cut at 120 characters (a
	// function's operation results in the steps table), encrypted values
	// as badges.
	"brief": briefHTML,
}

func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Truncate(time.Second).String()
}

// now is the engine's clock, so liveness and ages agree with the engine.
func (h *Handler) now() time.Time {
	if n := h.e.Config().Now; n != nil {
		return n().UTC()
	}
	return time.Now().UTC()
}

// stamp renders t as a <time> element: in UTC, saying so, for a page
// read without script; the dashboard's script shows it in the reader's
// local time instead unless they chose UTC (the footer's switch).
func stamp(t time.Time) template.HTML {
	t = t.UTC()
	return template.HTML(`<time datetime="` + t.Format("2006-01-02T15:04:05.000Z07:00") + `">` +
		t.Format("2006-01-02 15:04:05.000") + ` UTC</time>`)
}
