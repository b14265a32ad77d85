package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn/sdk"
)

// TestRunsPageAttributeFilter: in Chromium, the runs page's Attributes
// field filters the list (the conditions survive the reload), the rows
// show the attributes, and the run page shows them too.
func TestRunsPageAttributeFilter(t *testing.T) {
	const secret = "attrs-test-secret"
	bin, srv, c := browserServer(t, secret)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	serve(t, c, "", sdk.Workflow("billing", "1").Wait("paid", "paid"))
	start := func(attrs map[string]any) string {
		r, err := c.Start(ctx, "billing", sdk.StartOptions{Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	acme := start(map[string]any{"customer": "acme", "amount": 120})
	globex := start(map[string]any{"customer": "globex", "amount": 80})

	b := startBrowser(t, ctx, bin)
	b.run("open the runs page and give the key",
		chromedp.Navigate(srv.URL+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#key-form input[name=key]`)),
		chromedp.SendKeys(chromedp.CSS(`#key-form input[name=key]`), secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="`+globex+`"]`)),
	)
	b.run("filter by attributes",
		chromedp.SendKeys(chromedp.CSS(`form.filters input[name=attr]`), "customer:acme amount>100"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#runs tr[data-run="`+globex+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="`+acme+`"]`)),
		b.shot("runs-attributes.png"),
	)
	b.js("the row's attributes", `document.querySelector('#runs tr[data-run="`+acme+`"] td.attributes').textContent`, "amount=120 customer=acme")
	b.js("the field keeps the conditions", `document.querySelector('form.filters input[name=attr]').value`, "customer:acme amount>100")
	b.run("open the run",
		chromedp.Navigate(srv.URL+"/ui/runs/"+acme),
		chromedp.WaitVisible(chromedp.CSS(`#run-attributes`)),
	)
	b.js("the run's attributes", `document.querySelector('#run-attributes').textContent`, "amount=120 customer=acme")
}
