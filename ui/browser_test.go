package ui_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// chromium finds the browser scripts/testenv.sh installs. Without one the
// test skips, saying how to install it — except under CI, where the test
// setup installs it and its absence is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CAIRN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on CI: scripts/testenv.sh (make testenv) installs it with CI=true")
	}
	t.Skip("chromium is not installed: the dashboard's browser test needs it " +
		"(CAIRN_TESTENV_SYSTEM=1 make testenv installs Debian's chromium as root)")
	return ""
}

// TestDashboardInBrowser drives the dashboard in headless Chromium
// against a real server with keys and a real SDK worker: the key form, the
// runs table, a run's graph and timeline (one bar per attempt, a retried
// step's failed first attempt, a wait as its own bar), step output shown
// as text, a live update pushed by the run's stream, cancel, and
// pause and resume.
func TestDashboardInBrowser(t *testing.T) {
	const secret = "dashboard-test-secret"
	bin, srv, c := browserServer(t, secret)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a loaded machine starts Chromium slowly
	defer cancel()
	var checks atomic.Int32
	type out struct {
		HTML string `json:"html"`
	}
	report := sdk.Workflow("report", "1").
		Task("fetch", sdk.Handle(func(sdk.StepContext, struct{}) (out, error) { return out{HTML: "fetched"}, nil })).
		Task("summarize", sdk.Handle(func(sdk.StepContext, struct{}) (out, error) {
			return out{HTML: "<script>window.pwned = 1</script><b>bold?</b>"}, nil
		}), sdk.After("fetch")).
		Task("price", sdk.Handle(func(sdk.StepContext, struct{}) (out, error) { return out{HTML: "priced"}, nil }), sdk.After("fetch")).
		Task("publish", sdk.Handle(func(sdk.StepContext, struct{}) (out, error) { return out{HTML: "published"}, nil }), sdk.After("summarize", "price"))
	approval := sdk.Workflow("approval", "2").
		Task("check", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (out, error) {
			checks.Add(1)
			if ctx.Info().Attempt == 1 {
				return out{}, sdk.Retryable(errors.New("upstream answered 503"))
			}
			return out{HTML: "checked"}, nil
		}), sdk.Retry(sdk.RetryPolicy{MaxAttempts: 3, InitialBackoff: 50 * time.Millisecond})).
		Wait("approve", "approved", sdk.After("check"), sdk.Timeout(time.Hour)).
		Task("ship", sdk.Handle(func(sdk.StepContext, struct{}) (out, error) { return out{HTML: "shipped"}, nil }), sdk.After("approve"))
	serve(t, c, "browser-worker", report, approval)

	done, err := c.Start(ctx, "report", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(ctx, done.ID); err != nil || r.Status != sdk.RunCompleted {
		t.Fatalf("report run: %v %v", r, err)
	}
	waitingRun := func() string {
		return startUntilStep(t, ctx, c, "approval", sdk.StartOptions{Correlation: "order-7", Input: map[string]int{"order": 7}}, "approve", sdk.StepWaiting)
	}
	toCancel := waitingRun()
	toApprove := waitingRun()

	b := startBrowser(t, ctx, bin)
	bctx, shot, run, js := b.ctx, b.shot, b.run, b.js

	// The reader is in Tokyo: times are shown in their local time.
	if _, err := chromedp.Call(bctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"}); err != nil {
		t.Fatal(err)
	}

	// / redirects to the dashboard, which asks for a key.
	run("open and give the key",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#key-form input[name=key]`)),
		chromedp.SendKeys(chromedp.CSS(`#key-form input[name=key]`), secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr[data-run]`)),
		shot("runs.png"),
	)
	js("runs listed", `[...document.querySelectorAll('#runs tr[data-run]')].map(r => r.dataset.status).join(',')`, "running,running,completed")
	js("run row", `document.querySelector('#runs tr[data-run="`+done.ID+`"]').innerText.includes('report@1')`, true)

	// The completed run: every step green, the output shown as text.
	run("open the completed run",
		chromedp.Click(chromedp.CSS(`a[href="/ui/runs/`+done.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline`)),
	)
	js("graph of the completed run", `[...document.querySelectorAll('#dag g.node')].map(n => n.dataset.step + ':' + n.dataset.status).join(',')`,
		"fetch:completed,summarize:completed,price:completed,publish:completed")
	js("no script ran", `window.pwned === undefined`, true)
	js("output shown as text", `document.querySelector('#steps').textContent.includes('<script>window.pwned = 1</script>')`, true)
	run("rerun it from publish",
		chromedp.Click(chromedp.CSS(`#steps button.rerun-from[data-step=publish]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-rerun-of`)),
	)
	rerunID, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('run').dataset.run`))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(ctx, rerunID); err != nil || r.Status != sdk.RunCompleted || r.RerunOf != done.ID {
		t.Fatalf("the rerun the page started: %+v %v", r, err)
	}
	if j, err := c.Journal(ctx, rerunID); err != nil || !strings.Contains(fmt.Sprint(j), "reused") {
		t.Fatalf("the rerun reused no step: %v %v", j, err)
	}
	run("follow the link back",
		chromedp.Click(chromedp.CSS(`#run-rerun-of`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-run="`+done.ID+`"]`)),
	)

	// A waiting run with a retried step: one bar per attempt.
	run("open the run to cancel",
		chromedp.Navigate(srv.URL+"/ui/runs/"+toCancel),
		chromedp.WaitVisible(chromedp.CSS(`#timeline`)),
	)
	js("attempt bars of check", `[...document.querySelectorAll('#timeline g.bar[data-step=check]')].map(b => b.dataset.attempt + ':' + b.dataset.outcome).join(',')`,
		"1:failed,2:completed")
	js("the wait's bar", `document.querySelectorAll('#timeline g.bar[data-kind=wait][data-step=approve]').length`, 1)
	run("open check's second attempt's input",
		chromedp.Click(chromedp.CSS(`#steps tr[data-step=check] details.input[data-attempt="2"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#steps tr[data-step=check] details.input[data-attempt="2"][data-loaded=true]`)),
	)
	testutil.Eventually(t, 10*time.Second, "the input shown", func() (bool, string) {
		got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('#steps tr[data-step=check] details.input[data-attempt="2"] pre').textContent`))
		return err == nil && got == "{\n  \"order\": 7\n}", fmt.Sprint(got, err)
	})
	js("the retry in the steps table", `document.querySelector('#steps tr[data-step=check]').innerText.includes('upstream answered 503')`, true)
	js("graph of the waiting run", `[...document.querySelectorAll('#dag g.node')].map(n => n.dataset.step + ':' + n.dataset.status).join(',')`,
		"check:completed,approve:waiting,ship:pending")
	js("the wait says what it waits for", `document.querySelector('#steps tr[data-step=approve] .wait-detail').innerText.startsWith('for event approved')`, true)
	// The wait's timeout (an hour) is shown, at the instant the run has.
	held, err := c.Get(ctx, toCancel)
	if err != nil {
		t.Fatal(err)
	}
	wake := held.Step("approve").WakeAt
	if wake == nil || wake.Before(time.Now().Add(50*time.Minute)) || wake.After(time.Now().Add(61*time.Minute)) {
		t.Fatalf("the wait's wake_at %v, want an hour after it began", wake)
	}
	js("the wait says when it times out", `document.querySelector('#steps tr[data-step=approve] .wait-detail time').getAttribute('datetime')`,
		wake.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	js("in local time", `/^for event approved, times out \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\+09:00$/.test(document.querySelector('#steps tr[data-step=approve] .wait-detail').innerText)`, true)
	js("the event form offers it", `document.querySelector('#event-form input[name=name]').value`, "approved")
	js("local time", `/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\+09:00$/.test(document.querySelector('#journal time').textContent)`, true)
	js("the footer says so", `document.getElementById('tz-shown').textContent`, "times in local time (Asia/Tokyo)")
	run("switch to UTC", chromedp.Click(chromedp.CSS(`#tz-toggle`)))
	js("UTC", `/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/.test(document.querySelector('#journal time').textContent)`, true)
	js("the same instant", `new Date(document.querySelector('#journal time').getAttribute('datetime')).toISOString().replace('T', ' ').replace('Z', ' UTC') === document.querySelector('#journal time').textContent`, true)
	run("back to local time", chromedp.Click(chromedp.CSS(`#tz-toggle`)))
	js("local again", `document.querySelector('#journal time').textContent.endsWith('UTC+09:00')`, true)
	js("light by default", `getComputedStyle(document.body).backgroundColor`, "rgb(255, 255, 255)")
	if _, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	js("dark when the reader prefers it", `getComputedStyle(document.body).backgroundColor`, "rgb(15, 19, 26)")
	js("a waiting badge in the dark", `getComputedStyle(document.querySelector('#steps tr[data-step=approve] .status')).backgroundColor`, "rgb(78, 29, 9)")
	run("dark screenshot", shot("run-waiting-dark.png"))
	if _, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
	js("bars say how long", `document.querySelector('#timeline g.bar[data-step=check][data-attempt="1"] text.dur').textContent.endsWith('ms')`, true)
	js("mark the page before a bar is clicked", `window.barPage = true`, true)
	run("click the wait's bar", chromedp.Click(chromedp.CSS(`#timeline g.bar[data-step=approve] rect.span`)))
	js("the step's row is the target", `location.hash + ' ' + (document.querySelector('#steps tr:target') || {}).id`, "#step-approve step-approve")
	js("no reload for an anchor", `window.barPage === true`, true)
	run("cancel it",
		shot("run-waiting.png"),
		chromedp.Click(chromedp.CSS(`#cancel-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-status=cancelled]`)),
	)
	js("cancelled", `document.querySelector('#run-status').textContent`, "cancelled")
	if r, err := c.Get(ctx, toCancel); err != nil || r.Status != sdk.RunCancelled {
		t.Fatalf("the server does not have the run cancelled: %v %v", r.Status, err)
	}

	// A live page follows the run: an event sent elsewhere completes the
	// wait, the worker ships, and the page shows it without a reload.
	run("open the run to approve",
		chromedp.Navigate(srv.URL+"/ui/runs/"+toApprove),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-live=true]`)),
	)
	js("mark the page", `window.samePage = true`, true)
	// Paused, the run takes the event, but the step after the wait is
	// offered to no worker until the run is resumed.
	run("pause it",
		chromedp.Click(chromedp.CSS(`#pause-run[data-action=pause]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-status=paused] #pause-run[data-action=resume]`)),
	)
	js("the paused badge", `document.querySelector('#run-status').textContent`, "paused")
	if _, err := c.SendEvent(ctx, toApprove, sdk.Event{Name: "approved", Payload: map[string]string{"by": "ana"}}); err != nil {
		t.Fatal(err)
	}
	run("see the wait complete while paused",
		chromedp.WaitVisible(chromedp.CSS(`#run[data-status=paused] #steps tr[data-step=approve][data-status=completed]`)),
		shot("run-paused.png"),
	)
	js("ship waits for the resume", `document.querySelector('#steps tr[data-step=ship]').dataset.status`, "pending")
	if r, err := c.Get(ctx, toApprove); err != nil || r.Status != sdk.RunPaused {
		t.Fatalf("the server does not have the run paused: %v %v", r.Status, err)
	}
	run("resume it", chromedp.Click(chromedp.CSS(`#pause-run[data-action=resume]`)))
	run("see it complete",
		chromedp.WaitVisible(chromedp.CSS(`#run[data-status=completed]`)),
		shot("run-completed.png"),
	)
	js("no reload", `window.samePage === true`, true)
	js("graph after the event", `[...document.querySelectorAll('#dag g.node')].map(n => n.dataset.step + ':' + n.dataset.status).join(',')`,
		"check:completed,approve:completed,ship:completed")

	run("workers page",
		chromedp.Click(chromedp.CSS(`header nav a[href="/ui/workers"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-worker]`)),
		shot("workers.png"),
	)
	js("the worker is alive", `document.querySelector('#workers tr[data-worker]').dataset.alive`, "true")

	// Start a run from the runs page; the list then shows a run started
	// elsewhere without a reload; a bulk cancel of the matching runs.
	run("start a run from the dashboard",
		chromedp.Navigate(srv.URL+"/ui/?workflow=approval&status=running"),
		chromedp.WaitVisible(chromedp.CSS(`#start-form`)),
		chromedp.SetValue(chromedp.CSS(`#start-form select[name=workflow]`), "approval"),
		chromedp.SetValue(chromedp.CSS(`#start-form input[name=input]`), `{"from":"ui"}`),
		chromedp.Click(chromedp.CSS(`#start-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-live=true]`)),
	)
	started, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('run').dataset.run`))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Get(ctx, started); err != nil || r.Workflow != "approval" || string(r.Input) != `{"from":"ui"}` {
		t.Fatalf("the run the page started: %+v %v", r, err)
	}
	run("the filtered list", chromedp.Navigate(srv.URL+"/ui/?workflow=approval&status=running"), chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="`+started+`"]`)))
	js("mark the list", `window.listPage = true`, true)
	another := waitingRun()
	run("see a new run appear", chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="`+another+`"]`)))
	js("without a reload", `window.listPage === true`, true)
	run("cancel every matching run",
		chromedp.Click(chromedp.CSS(`button.bulk[data-action=cancel]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.bulk[data-armed=true]`)),
		chromedp.Click(chromedp.CSS(`button.bulk[data-action=cancel]`)),
		chromedp.WaitVisible(chromedp.CSS(`#batch-filter`)),
	)
	for _, id := range []string{started, another} {
		testutil.Eventually(t, 30*time.Second, "run "+id+" cancelled by the batch", func() (bool, string) {
			r, err := c.Get(ctx, id)
			if err != nil {
				return false, err.Error()
			}
			return r.Status == sdk.RunCancelled, string(r.Status)
		})
	}

	// The API reference renders from embedded assets.
	run("docs", chromedp.Navigate(srv.URL+"/docs"), chromedp.WaitVisible(chromedp.CSS(`elements-api`)))
	if checks.Load() < 4 {
		t.Fatalf("check ran %d times, want 2 per approval run", checks.Load())
	}
}

// browser is a headless Chromium page driven by a test: run does
// actions, js checks an expression's value; a failure prints the page.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// startBrowser starts Chromium (bin) for the test, closed when it ends;
// screenshots go to $CAIRN_SCREENSHOT_DIR, or a temporary directory.
func startBrowser(t *testing.T, ctx context.Context, bin string) *browser {
	t.Helper()
	shots := t.TempDir()
	if d := os.Getenv("CAIRN_SCREENSHOT_DIR"); d != "" {
		shots = d
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1360, 900),
		chromedp.UserDataDir(t.TempDir()))...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	// Started here, with the browser's own context: a bounded action's
	// context, had it started the browser, would close it when done.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: bctx, shots: shots}
}

func (b *browser) shot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		p := filepath.Join(b.shots, name)
		b.t.Logf("screenshot %s", p)
		return chromedp.Void{}, os.WriteFile(p, png, 0o644)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	sctx, scancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer scancel()
	html, _ := chromedp.Run(sctx, chromedp.OuterHTML(chromedp.CSS("main")))
	b.t.Fatalf("%s: %v\npage: %.3000s", what, err, html)
}

func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.within(3*time.Minute, what, actions...)
}

// within is run bounded by d.
func (b *browser) within(d time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(fmt.Sprintf("%s (within %v)", what, d), err)
	}
	b.t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
}

// eval is expr's value as a string.
func (b *browser) eval(what, expr string) string {
	b.t.Helper()
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		b.fail(what, err)
	}
	return fmt.Sprint(got)
}

func (b *browser) js(what, expr string, want any) {
	b.t.Helper()
	if got := b.eval(what, expr); got != fmt.Sprint(want) {
		b.t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// serve serves defs with a worker of c named name ("": a name of its
// own) that logs nothing, until the test ends.
func serve(t *testing.T, c *sdk.Client, name string, defs ...*sdk.WorkflowDef) {
	t.Helper()
	opts := []sdk.WorkerOption{sdk.WithLogger(slog.New(slog.DiscardHandler))}
	if name != "" {
		opts = append(opts, sdk.WithName(name))
	}
	testutil.ServeWorker(t, sdk.NewWorker(c, opts...).Register(defs...), time.Minute)
}

// startUntilStep starts a run of workflow with o and waits until its
// step's status is status; it returns the run's id.
func startUntilStep(t *testing.T, ctx context.Context, c *sdk.Client, workflow string, o sdk.StartOptions, step string, status sdk.StepStatus) string {
	t.Helper()
	r, err := c.Start(ctx, workflow, o)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "run "+r.ID+"'s step "+step+" "+string(status), func() (bool, string) {
		got, err := c.Get(ctx, r.ID)
		if err != nil {
			return false, err.Error()
		}
		s := got.Step(step)
		return s != nil && s.Status == status, fmt.Sprintf("%+v", s)
	})
	return r.ID
}

// browserServer starts what a dashboard browser test drives: Chromium's
// path (the test is skipped with -short), a server whose one key is
// secret's with scope admin, and a client with that key.
func browserServer(t *testing.T, secret string) (bin string, srv *sdktest.Server, c *sdk.Client) {
	t.Helper()
	return browserServerWith(t, secret, engine.Config{})
}

// browserServerWith is browserServer with the server's engine tuned by cfg.
func browserServerWith(t *testing.T, secret string, cfg engine.Config) (bin string, srv *sdktest.Server, c *sdk.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	bin = chromium(t)
	keys, err := auth.ParseKeys("ops:admin:" + auth.HashSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	srv = sdktest.Start(t, sdktest.Options{Keys: keys, Engine: cfg})
	if c, err = sdk.NewClient(srv.URL, sdk.WithAPIKey(secret)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return bin, srv, c
}
