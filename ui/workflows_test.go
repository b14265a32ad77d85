package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// The workflows page lists each workflow's versions; a version's page
// draws its graph with the compensation band, lists its steps with their
// options, and the schedules that start it; the schedules page shows each
// schedule's counters and last error. Values are text, never markup.
func TestWorkflowAndSchedulePages(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	ctx := context.Background()
	wf := cairn.Workflow{Name: "orders", Version: "2", Description: "takes <b>orders</b>",
		Steps: []cairn.Step{
			{ID: "charge", Input: []byte(`{"amount":"${input.amount}"}`)},
			{ID: "ship", After: []string{"charge"}},
		},
		OnFailure: []cairn.Step{{ID: "refund"}},
	}
	old := cairn.Workflow{Name: "orders", Version: "1", Steps: []cairn.Step{{ID: "charge"}}}
	f.registerFor("w1", old, wf)
	if _, err := f.e.Schedules().Create(ctx, cairn.ScheduleRequest{ID: "nightly", Workflow: "orders", Version: "2", Cron: "0 3 * * *", TimeZone: "Europe/Paris"}); err != nil {
		t.Fatal(err)
	}

	_, body, _ := f.get("/ui/workflows", "")
	for _, want := range []string{`<tr data-workflow="orders">`, `<a href="/ui/workflows/orders/2">2</a>`, `<a href="/ui/workflows/orders/1">1</a>`, `href="/ui/workflows"`} {
		if !strings.Contains(body, want) {
			t.Errorf("workflows page lacks %s", want)
		}
	}

	st, body, _ := f.get("/ui/workflows/orders/2", "")
	if st != 200 {
		t.Fatalf("definition page: %d %.300s", st, body)
	}
	for _, want := range []string{
		`takes &lt;b&gt;orders&lt;/b&gt;`,
		`<g class="node" data-step="refund">`,
		`on failure (compensation)`,
		`<tr id="step-ship" data-step="ship"><td><code>ship</code></td><td>task</td><td>charge</td>`,
		`&#34;amount&#34;: &#34;${input.amount}&#34;`,
		`<tr data-schedule="nightly"><td><code>nightly</code></td><td><code>0 3 * * *</code> Europe/Paris</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("definition page lacks %s", want)
		}
	}
	if strings.Contains(body, "<b>orders</b>") {
		t.Error("a description is rendered as HTML")
	}
	if _, body, _ := f.get("/ui/workflows/orders/1", ""); strings.Contains(body, `data-schedule="nightly"`) {
		t.Error("version 1's page shows version 2's schedule")
	}
	if st, _, _ := f.get("/ui/workflows/orders/9", ""); st != 404 {
		t.Errorf("an unknown version: %d, want 404", st)
	}

	_, body, _ = f.get("/ui/schedules", "")
	for _, want := range []string{`<tr data-schedule="nightly" data-failed="0">`, `<a href="/ui/workflows/orders/2">orders@2</a>`, `<code>0 3 * * *</code> Europe/Paris`} {
		if !strings.Contains(body, want) {
			t.Errorf("schedules page lacks %s", want)
		}
	}
}

// A schedule whose tick cannot start a run (the version it names is no
// longer there) is shown failed on the schedules page, with the error the
// API has for it. The server's own reap loop takes the tick, on a clock
// moved two minutes on.
func TestSchedulesPageShowsAFailedTick(t *testing.T) {
	var skew atomic.Int64
	srv := sdktest.Start(t, sdktest.Options{Engine: engine.Config{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}})
	c, err := sdk.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	serve(t, c, "w1", sdk.Workflow("orders", "1").Task("charge", sdk.Handle(func(sdk.StepContext, struct{}) (struct{}, error) { return struct{}{}, nil })))
	if _, err := c.CreateSchedule(ctx, "orders", "* * * * *", sdk.ScheduleOptions{ID: "minutely", Version: "1"}); err != nil {
		t.Fatal(err)
	}
	page := func() string {
		res, err := http.Get(srv.URL + "/ui/schedules")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if body := page(); !strings.Contains(body, `<tr data-schedule="minutely" data-failed="0">`) {
		t.Fatalf("the new schedule is not listed unfailed:\n%.3000s", body)
	}
	// No API removes a registered version: the schedule's record is made
	// to name one there is not, as if it had been removed.
	const key = "schedules/minutely"
	o, err := srv.Store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(o.Data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["version"] = "9"
	data, _ := json.Marshal(rec)
	if _, err := srv.Store.Swap(ctx, key, data, o.Version); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(2 * time.Minute))

	var s *sdk.Schedule
	testutil.Eventually(t, 30*time.Second, "the tick failed", func() (bool, string) {
		s, err = c.GetSchedule(ctx, "minutely")
		return err == nil && s.Failed == 1 && s.LastError != "", fmt.Sprint(s, err)
	})
	if !strings.Contains(s.LastError, "orders@9") || s.Fired != 0 || s.LastRun != "" {
		t.Fatalf("the failed tick: %+v", s)
	}
	body := page()
	for _, want := range []string{
		`<tr data-schedule="minutely" data-failed="1">`,
		`<span class="status s-failed">1</span>`,
		`<td class="error">` + html.EscapeString(s.LastError) + `</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the schedules page lacks %s:\n%.3000s", want, body)
		}
	}
}

// The runs page's time range: runs started in the last hour are listed,
// the bulk buttons carry the range to the batch they start, and a range
// the page does not offer is a 422 naming it.
func TestRunsSince(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	ctx := context.Background()
	f.registerFor("w1", oneStep)
	r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := f.get("/ui/?since=1h", "")
	if !strings.Contains(body, `<tr data-run="`+r.Run.ID+`"`) || !strings.Contains(body, `<option value="1h" selected>`) || !strings.Contains(body, `data-started-after="20`) {
		t.Errorf("since=1h: the run, the choice or the bulk range missing:\n%.3000s", body)
	}
	if st, body, _ := f.get("/ui/?since=2y", ""); st != 422 || !strings.Contains(body, "since") {
		t.Errorf("since=2y: %d %.300s", st, body)
	}
}

// A worker that said it stopped is shown stopped on the workers page.
func TestWorkersPageShowsStopped(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	ctx := context.Background()
	f.registerFor("w-gone", oneStep)
	if _, body, _ := f.get("/ui/workers", ""); !strings.Contains(body, `<tr data-worker="w-gone" data-alive="true">`) {
		t.Fatalf("a registered worker is not alive:\n%.2000s", body)
	}
	if err := f.e.StopWorker(ctx, "w-gone"); err != nil {
		t.Fatal(err)
	}
	_, body, _ := f.get("/ui/workers", "")
	if !strings.Contains(body, `<tr data-worker="w-gone" data-alive="false">`) || !strings.Contains(body, `>stopped</span>`) {
		t.Fatalf("a stopped worker is not shown stopped:\n%.2000s", body)
	}
}

// The search box takes the start of a run id: those runs only; a
// correlation still finds its runs.
func TestRunsByIDPrefix(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	ctx := context.Background()
	f.registerFor("w1", oneStep)
	var ids []string
	for _, corr := range []string{"order-1", "order-2", "order-3"} {
		r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "wf", Correlation: corr})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Run.ID)
	}
	// The longest prefix of ids[0] no other id shares.
	n := 1
	for _, id := range ids[1:] {
		for n <= len(id) && id[:n] == ids[0][:n] {
			n++
		}
	}
	_, body, _ := f.get("/ui/?q="+ids[0][:n], "")
	if !strings.Contains(body, `<tr data-run="`+ids[0]+`"`) || strings.Contains(body, `<tr data-run="`+ids[1]+`"`) || strings.Contains(body, `<tr data-run="`+ids[2]+`"`) {
		t.Errorf("q=%s: want only %s:\n%.2000s", ids[0][:n], ids[0], body)
	}
	if _, body, _ := f.get("/ui/?q=order-2", ""); !strings.Contains(body, `<tr data-run="`+ids[1]+`"`) || strings.Contains(body, `<tr data-run="`+ids[0]+`"`) {
		t.Errorf("q=order-2: want only %s", ids[1])
	}
}

// oneStep is a workflow of one task step.
var oneStep = cairn.Workflow{Name: "wf", Version: "1", Steps: []cairn.Step{{ID: "a"}}}

// registerFor registers wfs for worker on the fixture's engine.
func (f *fixture) registerFor(worker string, wfs ...cairn.Workflow) {
	f.t.Helper()
	if _, err := f.e.Register(context.Background(), cairn.RegisterRequest{WorkerID: worker, Workflows: wfs}); err != nil {
		f.t.Fatal(err)
	}
}
