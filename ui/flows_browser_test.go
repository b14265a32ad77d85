package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
)

// TestDashboardFlowsInBrowser drives the run page of a workflow with a
// map step, a child step and a compensation that runs (its last step
// fails): the graph draws each with its kind and the compensation in its
// band, the timeline has the map's, the child's and the compensation's
// bars, the child step links to its run and that run to its parent, the
// step totals are the API's, journal rows and steps are reached by their
// fragments; then a bulk rerun of the failed runs, and the workers page
// showing a worker that registers while it is open.
func TestDashboardFlowsInBrowser(t *testing.T) {
	const secret = "flows-test-secret"
	bin, srv, c := browserServer(t, secret)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a loaded machine starts Chromium slowly
	defer cancel()

	type text struct {
		Text string `json:"text"`
	}
	invoice := sdk.Workflow("invoice", "1").
		Task("bill", sdk.Handle(func(sdk.StepContext, struct{}) (text, error) { return text{"billed"}, nil }))
	order := sdk.Workflow("order", "1").
		Task("lines", sdk.Handle(func(sdk.StepContext, struct{}) (map[string][]int, error) {
			return map[string][]int{"lines": {1, 2, 3}}, nil
		})).
		Map("pack", "steps.lines.output.lines", sdk.Handle(func(_ sdk.StepContext, n int) (int, error) { return 10 * n, nil }), sdk.After("lines")).
		Child("invoice", "invoice", sdk.After("pack")).
		Task("charge", sdk.Handle(func(sdk.StepContext, struct{}) (text, error) {
			return text{}, sdk.Failure("fatal", errors.New("card declined"))
		}), sdk.After("invoice")).
		OnFailure("refund", sdk.Handle(func(sdk.StepContext, struct{}) (text, error) { return text{"refunded"}, nil }))
	serve(t, c, "flows-worker", order, invoice)

	started, err := c.Start(ctx, "order", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := c.Wait(ctx, started.ID)
	if err != nil || parent.Status != sdk.RunFailed || parent.Compensation == nil || parent.Compensation.Status != cairn.CompensationCompleted {
		t.Fatalf("the order run: %+v %v", parent, err)
	}
	child := parent.Step("invoice").Child
	if child == "" {
		t.Fatalf("the invoice step has no child run: %+v", parent.Step("invoice"))
	}

	b := startBrowser(t, ctx, bin)
	b.run("open the run and give the key",
		chromedp.Navigate(srv.URL+"/ui/runs/"+parent.ID),
		chromedp.WaitVisible(chromedp.CSS(`#key-form input[name=key]`)),
		chromedp.SendKeys(chromedp.CSS(`#key-form input[name=key]`), secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline`)),
		b.shot("run-flows.png"),
	)

	// The graph: every step with its kind and status, the compensation
	// step in the band below the others.
	b.js("graph", `[...document.querySelectorAll('#dag g.node')].map(n => n.querySelector('title').textContent).join(', ')`,
		"lines (task): completed, pack (map): completed, invoice (child): completed, charge (task): failed, refund (task): completed")
	b.js("the compensation band", `document.querySelector('#dag text.band').textContent`, "on failure (compensation)")
	b.js("the compensation below the band", `(() => {
		const band = Number(document.querySelector('#dag text.band').getAttribute('y'));
		const y = id => Number(document.querySelector('#dag g.node[data-step=' + id + '] rect').getAttribute('y'));
		return ['lines', 'pack', 'invoice', 'charge'].every(id => y(id) < band) && y('refund') > band;
	})()`, true)
	b.js("the map's progress on its node", `document.querySelector('#dag g.node[data-step=pack] text').textContent.includes('3/3')`, true)

	// The timeline: a bar for the map step and one for the child step
	// (each from its start to its end, with how long it took), an attempt
	// bar for each task, the compensation's included.
	// (A lease lost on a loaded machine adds an attempt bar: the last
	// attempt's is checked.)
	b.js("the map's and the child's bars", `[...document.querySelectorAll('#timeline g.bar:not([data-kind=attempt])')].map(g => g.dataset.step + ':' + g.dataset.kind + ':' + g.dataset.outcome).join(',')`,
		"pack:map:completed,invoice:child:completed")
	b.js("the last attempt bars", `['lines', 'charge', 'refund'].map(id => [...document.querySelectorAll('#timeline g.bar[data-kind=attempt][data-step=' + id + ']')].pop()).map(g => g.dataset.step + ':' + g.dataset.outcome).join(',')`,
		"lines:completed,charge:failed,refund:completed")
	b.js("the compensation's bar is the last", `[...document.querySelectorAll('#timeline g.bar')].pop().dataset.step`, "refund")
	for _, step := range []string{"pack", "invoice", "refund"} {
		b.js(step+"'s bar says how long", `/^\d+(\.\d+)?(ms|s)$/.test(document.querySelector('#timeline g.bar[data-step=`+step+`] text.dur').textContent)`, true)
		b.js(step+"'s bar has a width", `Number(document.querySelector('#timeline g.bar[data-step=`+step+`] rect.span').getAttribute('width')) >= 2`, true)
	}
	b.js("a map bar's title", `document.querySelector('#timeline g.bar[data-step=pack] title').textContent.startsWith('map pack: ')`, true)

	// The steps table: kinds, the map's items, the compensation's error-free
	// attempt, the child run's link.
	b.js("kinds", `[...document.querySelectorAll('#steps > tbody > tr[data-step]')].map(r => r.dataset.step + ':' + r.cells[1].textContent).join(',')`,
		"lines:task,pack:map,invoice:child,charge:task,refund:task")
	b.js("the map's items", `document.querySelector('#steps tr[data-step=pack] .map-progress').textContent`, "3 completed, 0 failed, 0 running of 3")
	b.js("the failure", `document.querySelector('#steps tr[data-step=charge]').innerText.includes('card declined')`, true)

	// Step totals: the page's are the API's (and the runs list's).
	api := apiRun(t, ctx, srv.URL, secret, parent.ID)
	want := fmt.Sprintf("%d/%d done", api.StepsDone, api.StepsTotal)
	if api.StepsDone != 3 || api.StepsTotal != 4 {
		t.Errorf("GET /runs/{run}: %s, want 3/4 (a map step counts once, compensation steps not)", want)
	}
	b.js("the page's step totals", `[...document.querySelectorAll('#run dl.facts dt')].find(d => d.textContent === 'Steps').nextElementSibling.textContent`, want)

	// The child step links to its run, and the child run to its parent.
	b.run("open the child run",
		chromedp.Click(chromedp.CSS(`#steps tr[data-step=invoice] a[href="/ui/runs/`+child+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-run="`+child+`"]`)),
	)
	b.js("the child names its parent's step", `document.querySelector('#run-parent').parentElement.textContent`, parent.ID+" (its step invoice)")
	b.run("follow the link to the parent",
		chromedp.Click(chromedp.CSS(`#run-parent`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-run="`+parent.ID+`"]`)),
	)

	// Anchors: a journal row's own link makes it the target; a URL's
	// fragment reaches a journal row or a step of a page loaded anew.
	b.js("journal rows have ids", `[...document.querySelectorAll('#journal tbody tr')].every((r, i) => r.id === 'j' + i && r.querySelector('a.anchor').getAttribute('href') === '#j' + i)`, true)
	b.js("mark the page", `window.anchorPage = true`, true)
	b.run("click a journal row's anchor", chromedp.Click(chromedp.CSS(`#journal tr#j2 a.anchor`)))
	b.js("the row is the target", `location.hash + ' ' + document.querySelector('#journal tr:target').id`, "#j2 j2")
	b.js("no reload for a journal anchor", `window.anchorPage === true`, true)
	for _, frag := range []string{"j3", "step-refund"} {
		// From another page, so that the browser loads the page (and the
		// dashboard renders it again with the key).
		b.run("leave for the child run", chromedp.Navigate(srv.URL+"/ui/runs/"+child), chromedp.WaitVisible(chromedp.CSS(`#run[data-run="`+child+`"]`)))
		b.run("open #"+frag, chromedp.Navigate(srv.URL+"/ui/runs/"+parent.ID+"#"+frag), chromedp.WaitVisible(chromedp.CSS(`#run[data-run="`+parent.ID+`"]`)))
		testutil.Eventually(t, 10*time.Second, "#"+frag+" is the target", func() (bool, string) {
			got := b.eval("the target", `(document.querySelector(':target') || {}).id`)
			return got == frag, got
		})
	}

	// A bulk rerun of the failed order runs: one batch, one rerun of the
	// run (not of its child, another workflow).
	b.run("the failed order runs",
		chromedp.Navigate(srv.URL+"/ui/?workflow=order&status=failed"),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="`+parent.ID+`"]`)),
	)
	b.js("the list's step totals", `document.querySelector('#runs tr[data-run="`+parent.ID+`"]').cells[5].textContent + ' done'`, want)
	b.run("rerun every matching run",
		chromedp.Click(chromedp.CSS(`button.bulk[data-action=rerun]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.bulk[data-action=rerun][data-armed=true]`)),
		chromedp.Click(chromedp.CSS(`button.bulk[data-action=rerun]`)),
		chromedp.WaitVisible(chromedp.CSS(`#batch-filter`)),
	)
	batchID := strings.TrimPrefix(b.eval("the batch page", `location.pathname`), "/ui/batches/")
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	batch, err := c.WaitBatch(wctx, batchID, 100*time.Millisecond)
	wcancel()
	if err != nil || batch.Action != "rerun" || batch.Matched != 1 || batch.Applied != 1 {
		t.Fatalf("the batch the page started (%s): %+v %v", batchID, batch, err)
	}
	var reruns []string
	page, err := c.List(ctx, sdk.ListOptions{Workflow: "order"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Runs {
		if r.ID != parent.ID {
			reruns = append(reruns, r.ID)
		}
	}
	if len(reruns) != 1 {
		t.Fatalf("order runs after the bulk rerun: %+v, want the original and one rerun", page.Runs)
	}
	rerun, err := c.Wait(ctx, reruns[0])
	if err != nil || rerun.RerunOf != parent.ID || rerun.Status != sdk.RunFailed || rerun.Compensation == nil || rerun.Compensation.Status != cairn.CompensationCompleted {
		t.Fatalf("the rerun: %+v %v", rerun, err)
	}

	// The workers page refreshes while open: a worker that registers
	// after it loaded appears without a reload.
	b.run("workers page",
		chromedp.Navigate(srv.URL+"/ui/workers"),
		chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-worker="flows-worker"]`)),
	)
	b.js("only the first worker", `document.querySelectorAll('#workers tr[data-worker]').length`, 1)
	b.js("mark the workers page", `window.workersPage = true`, true)
	serve(t, c, "late-worker", invoice)
	b.within(30*time.Second, "see the late worker appear", chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-worker="late-worker"][data-alive=true]`)))
	b.js("without a reload", `window.workersPage === true`, true)
}

// apiRun is GET /v1/api/runs/{run} as the API answers it.
func apiRun(t *testing.T, ctx context.Context, server, key, run string) cairn.Run {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", server+"/v1/api/runs/"+run, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r cairn.Run
	if err := json.NewDecoder(res.Body).Decode(&r); res.StatusCode != 200 || err != nil {
		t.Fatalf("GET /runs/%s: %d %v", run, res.StatusCode, err)
	}
	return r
}
