package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn/sdk"
)

// TestResumeInterruptedStepInBrowser: a run whose step interrupted shows
// the step waiting for input with its payload as text (markup in it is
// shown, never run), and the step's form answers it: the step runs again
// with the answer and the run completes with it.
func TestResumeInterruptedStepInBrowser(t *testing.T) {
	const secret = "interrupt-test-secret"
	bin, srv, c := browserServer(t, secret)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wf := sdk.Workflow("review", "1").Task("approve", sdk.Handle(func(sc sdk.StepContext, _ struct{}) (any, error) {
		var answer any
		if ok, err := sc.Resumed(&answer); err != nil || !ok {
			return nil, sdk.Interrupt(map[string]string{"question": `<img src=x onerror='window.pwned=1'> ship it?`})
		}
		return map[string]any{"answer": answer}, nil
	}))
	serve(t, c, "", wf)
	run := startUntilStep(t, ctx, c, "review", sdk.StartOptions{}, "approve", sdk.StepInterrupted)

	b := startBrowser(t, ctx, bin)
	row := `#steps tr[data-step=approve]`
	b.run("open the run and give the key",
		chromedp.Navigate(srv.URL+"/ui/runs/"+run),
		chromedp.WaitVisible(chromedp.CSS(`#key-form input[name=key]`)),
		chromedp.SendKeys(chromedp.CSS(`#key-form input[name=key]`), secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(row+`[data-status=interrupted] form.resume-step textarea`)),
		b.shot("run-interrupted.png"),
	)
	b.js("the payload as text", `document.querySelector('`+row+` pre.interrupt').textContent.includes("<img src=x onerror='window.pwned=1'> ship it?")`, true)
	b.js("no markup from the payload", `document.querySelectorAll('#steps img').length`, 0)
	b.js("no script ran", `window.pwned === undefined`, true)
	b.run("answer it",
		chromedp.SendKeys(chromedp.CSS(row+` form.resume-step textarea`), `{"approved": true}`),
		chromedp.Click(chromedp.CSS(row+` form.resume-step button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-status=completed]`)),
	)
	done, err := c.Get(ctx, run)
	if err != nil || done.Status != sdk.RunCompleted || string(done.Output) != `{"answer":{"approved":true}}` {
		t.Fatalf("the run after the answer: %v %v", done, err)
	}
}
