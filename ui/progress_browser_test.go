package ui_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
)

// TestRunPageShowsProgress: a live run's page reads the run's stream with
// the key and shows a step's progress while the step runs — a percent and
// a message as text (markup in it is shown, never run), then a value with
// neither as compact JSON — keeps it across a render the run's change
// caused, opens the stream again when the server closes it (streams here
// last 2.4 s) without rendering the page again, and renders the final
// page at the stream's end. The step publishes only when the test lets
// it.
func TestRunPageShowsProgress(t *testing.T) {
	const secret = "progress-test-secret"
	bin, srv, c := browserServerWith(t, secret, engine.Config{MaxRequestTime: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	entered, gate := make(chan struct{}), make(chan struct{})
	next := func(what string) {
		t.Helper()
		select {
		case gate <- struct{}{}:
		case <-time.After(time.Minute):
			t.Fatalf("the step did not take the gate to %s", what)
		}
	}
	values := []any{
		map[string]any{"percent": 25, "message": `<img src=x onerror="window.pwned=1">`},
		map[string]any{"rows": 3, "of": "<i>x</i>"},
	}
	type out struct{ Rows int }
	wf := sdk.Workflow("upload", "1").Task("transfer", sdk.Handle(func(sc sdk.StepContext, _ struct{}) (out, error) {
		close(entered)
		for _, v := range values {
			select {
			case <-gate:
			case <-sc.Done():
				return out{}, sc.Err()
			}
			if err := sdk.Progress(sc, v); err != nil {
				return out{}, err
			}
		}
		select {
		case <-gate:
		case <-sc.Done():
			return out{}, sc.Err()
		}
		return out{Rows: 3}, nil
	}), sdk.Timeout(2*time.Minute))
	serve(t, c, "", wf)
	r, err := c.Start(ctx, "upload", sdk.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the step never ran")
	}

	b := startBrowser(t, ctx, bin)
	sent := streamIDs(t, b.ctx)
	row := `#steps tr[data-step=transfer] .step-progress`
	shows := func(what, want string) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, what, func() (bool, string) {
			got := b.eval(what, `(document.querySelector('`+row+` .progress-value') || {}).textContent`)
			return got == want, got
		})
	}
	b.run("open the key form", chromedp.Navigate(srv.URL+"/ui/runs/"+r.ID), chromedp.WaitVisible(chromedp.CSS(`#key-form input[name=key]`)))
	b.run("give the key and see the stream open",
		chromedp.SendKeys(chromedp.CSS(`#key-form input[name=key]`), secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-live=true][data-opens="1"]`)),
	)
	b.js("mark the page", `window.samePage = true`, true)

	next("publish a percent and a message")
	shows("the percent and the message", `25% · <img src=x onerror="window.pwned=1">`)
	b.js("the bar", `document.querySelector('`+row+` progress').value`, 25)
	b.js("no markup from the value", `document.querySelectorAll('#steps img').length`, 0)
	b.js("no script ran", `window.pwned === undefined`, true)

	// A change of the run renders the page again; the value stays.
	if _, err := c.SendEvent(ctx, r.ID, sdk.Event{Name: "poke"}); err != nil {
		t.Fatal(err)
	}
	b.run("see the run's change", chromedp.WaitVisible(chromedp.CSS(`#pending-events code`)))
	shows("the value after the render", `25% · <img src=x onerror="window.pwned=1">`)

	// The server closes the stream after 2.4 s; the page opens it again
	// from where it was, and the next value comes over the new one.
	b.run("see the stream opened again", chromedp.WaitVisible(chromedp.CSS(`#run[data-opens="2"]`)))
	next("publish a value with no percent")
	shows("the value as compact JSON", `{"of":"<i>x</i>","rows":3}`)
	b.js("no bar", `document.querySelectorAll('`+row+` progress').length`, 0)
	b.js("the attempt", `document.querySelector('`+row+`').dataset.attempt`, 1)

	next("finish")
	b.run("see the run end", chromedp.WaitVisible(chromedp.CSS(`#run[data-status=completed]`)))
	shows("the last value on the final page", `{"of":"<i>x</i>","rows":3}`)
	b.js("never reloaded", `window.samePage === true`, true)
	if got, err := c.Get(ctx, r.ID); err != nil || got.Status != sdk.RunCompleted {
		t.Fatalf("the run: %v %v", got, err)
	}
	// The page sent its place each time: the first stream from the rev
	// and journal length it was rendered with, the second from the last
	// event's id, past the run's change.
	ids := sent()
	if len(ids) < 2 || !eventID.MatchString(ids[0]) || !eventID.MatchString(ids[1]) || ids[0] == ids[1] {
		t.Fatalf("the streams' Last-Event-ID: %q, want rev.seq, the second past the first", ids)
	}
}

var eventID = regexp.MustCompile(`^\d+\.\d+$`)

// streamIDs records the Last-Event-ID of each run stream the page asks
// for; the function returned gives them, in order.
func streamIDs(t *testing.T, ctx context.Context) func() []string {
	var mu sync.Mutex
	var ids []string
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && strings.HasSuffix(e.Request.URL, "/stream") {
			id, _ := e.Request.Headers["Last-Event-ID"].(string)
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}
}
