package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
)

// TestPublishFromEventsPage: the events page lists a workflow's trigger,
// and its form publishes an event whose answer lists the run it started
// as a link (markup in the ids is shown as text); publishing the same id
// again answers the same run, marked had started; the link opens the
// run's page, which names the event.
func TestPublishFromEventsPage(t *testing.T) {
	const secret = "events-test-secret"
	bin, srv, c := browserServer(t, secret)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wf := sdk.Workflow("signup", "1").On("user.created", "").
		Task("welcome", sdk.Handle(func(sdk.StepContext, struct{}) (struct{}, error) { return struct{}{}, nil }))
	serve(t, c, "", wf)

	b := startBrowser(t, ctx, bin)
	b.run("open the key form", chromedp.Navigate(srv.URL+"/ui/events"), chromedp.WaitVisible(chromedp.CSS(`#key-form input[name=key]`)))
	b.run("give the key and see the trigger",
		chromedp.SendKeys(chromedp.CSS(`#key-form input[name=key]`), secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#event-triggers tr[data-event="user.created"][data-workflow=signup]`)),
	)
	publish := func(what string) {
		b.eval("clear the answer", `document.getElementById('published').textContent = ''`)
		b.eval("clear the answer", `document.getElementById('action-result').textContent = ''`)
		b.run(what,
			chromedp.SetValue(chromedp.CSS(`#publish-form input[name=name]`), "user.created"),
			chromedp.SetValue(chromedp.CSS(`#publish-form input[name=event_id]`), "u-<b>1</b>"),
			chromedp.SetValue(chromedp.CSS(`#publish-form input[name=payload]`), `{"plan":"pro"}`),
			chromedp.Click(chromedp.CSS(`#publish-form button[type=submit]`)),
		)
		testutil.Eventually(t, time.Minute, what, func() (bool, string) {
			got := b.eval(what, `document.getElementById('action-result').textContent`)
			return got != "", got
		})
		b.run("see the runs", chromedp.WaitVisible(chromedp.CSS(`#published li a`)), b.shot("events-published.png"))
	}
	publish("publish an event")
	b.js("the answer", `document.getElementById('action-result').textContent`, "event u-<b>1</b>: 1 run(s), 0 cancelled")
	b.js("no markup from the id", `document.querySelectorAll('#main b').length`, 0)
	run := b.eval("the run's id", `document.querySelector('#published li a').textContent`)
	b.js("the item", `document.querySelector('#published li').textContent`, "started signup@1: "+run)
	publish("publish the same id again")
	b.js("the same run, had started", `document.querySelector('#published li').textContent`, "had started signup@1: "+run)
	b.run("open the run", chromedp.Click(chromedp.CSS(`#published li a`)), chromedp.WaitVisible(chromedp.CSS(`#run-event`)))
	b.js("the run names its event", `document.getElementById('run-event').textContent`, "user.created (id u-<b>1</b>)")
	if got, err := c.Get(ctx, run); err != nil || got.Event == nil || got.Event.ID != "u-<b>1</b>" {
		t.Fatalf("the run: %+v %v", got, err)
	}
}
