package ui_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/codec"
	"github.com/cairn-dev/cairn/sdk/codec/codectest"
)

// TestEncryptedValuesInBrowser: a run whose input, step outputs, state
// and event payload a client encrypted (sdk/codec) shows each as a badge
// naming its key and none of the plaintext; given the keyring in the
// Decrypt panel, the page shows the plaintext, again after a reload (the
// tab keeps the keyring) and in an attempt's input read later; no request
// the page made carried the key — neither as the browser sent it (the
// DevTools protocol's record of every request) nor as the server received
// it (a recording proxy in front of it).
func TestEncryptedValuesInBrowser(t *testing.T) {
	const secret = "encrypted-test-secret"
	bin, srv, c := browserServer(t, secret)

	// Everything the server receives from the browser, through a proxy.
	var mu sync.Mutex
	var received []string
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var h strings.Builder
		_ = r.Header.Write(&h)
		mu.Lock()
		received = append(received, r.Method+" "+r.URL.String()+"\n"+h.String()+"\n"+string(body))
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	ring := codectest.New(t)
	keyring, seal := ring.JSON, ring.Seal

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	vault := sdk.Workflow("vault", "1").
		Task("charge", sdk.Handle(func(ctx sdk.StepContext, in json.RawMessage) (json.RawMessage, error) {
			if !codec.IsEncrypted(in) {
				return nil, fmt.Errorf("the input came in clear: %s", in)
			}
			if err := ctx.SetState("customer", seal("ana@example.com")); err != nil {
				return nil, err
			}
			out, _ := json.Marshal(map[string]any{"status": "charged", "receipt": seal(map[string]string{"receipt": "r-123", "last4": "4242"})})
			return out, nil
		})).
		Wait("approve", "approved", sdk.After("charge"))
	serve(t, c, "vault-worker", vault)

	id := startUntilStep(t, ctx, c, "vault", sdk.StartOptions{Input: seal(map[string]string{"card": "4242 4242 4242 4242"})}, "approve", sdk.StepWaiting)
	if _, err := c.SendEvent(ctx, id, sdk.Event{Name: "approved", Payload: seal(map[string]string{"by": "bruno"})}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Wait(ctx, id); err != nil || got.Status != sdk.RunCompleted {
		t.Fatalf("run: %+v %v", got, err)
	}

	b := startBrowser(t, ctx, bin)
	bctx := b.ctx
	// Every request the browser sends, as the DevTools protocol reports it.
	var sent []string
	if err := chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			h, _ := json.Marshal(e.Request.Headers)
			var post strings.Builder
			for _, p := range e.Request.PostDataEntries {
				post.Write(p.Bytes)
			}
			mu.Lock()
			sent = append(sent, e.Request.Method+" "+e.Request.URL+"\n"+string(h)+"\n"+post.String())
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	shot, run, js := b.shot, b.run, b.js
	text := func(sel string) string {
		t.Helper()
		got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector(`+jsString(sel)+`).textContent`))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return got
	}

	run("open the run",
		chromedp.Navigate(front.URL+"/ui/runs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#key-form input[name=key]`)),
		chromedp.SendKeys(chromedp.CSS(`#key-form input[name=key]`), secret),
		chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run[data-status=completed]`)),
	)
	// Badges (the input, charge's receipt, approve's event, which is the
	// run's output too, the state), and no plaintext anywhere on the page.
	js("the input's badge", `document.querySelector('#run-input .enc').textContent`, "encrypted (key k2)")
	js("the state's badge", `document.querySelector('#run-state .enc').textContent`, "encrypted (key k2)")
	js("the output's badge in the clear part", `document.querySelector('#steps tr.detail pre .enc') !== null && document.querySelector('#steps tr.detail pre').textContent.includes('"status": "charged"')`, true)
	js("badges in all", `[...document.querySelectorAll('span.enc[data-envelope]')].map(e => (e.closest('[id]') || {}).id).join(',')`, "steps,steps,run-input,run-output,run-state")
	js("no plaintext", `['4242', 'r-123', 'bruno', 'ana@example.com'].filter(s => document.body.innerText.includes(s)).join(',')`, "")
	js("no base64 noise", `document.getElementById('run-input').textContent.includes('ct')`, false)
	run("badge screenshot", chromedp.Click(chromedp.CSS(`#steps tr.detail details summary`)), shot("encrypted-run.png"))

	// The keyring, pasted into the panel.
	run("paste the keyring",
		chromedp.Click(chromedp.CSS(`#keyring-summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#keyring-text`)),
		chromedp.SetValue(chromedp.CSS(`#keyring-text`), keyring),
		chromedp.Click(chromedp.CSS(`#keyring-use`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-input .dec`)),
	)
	testutil.Eventually(t, 10*time.Second, "every value decrypted", func() (bool, string) {
		got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelectorAll('span.enc[data-envelope]').length + ' ' + document.getElementById('keyring-status').textContent`))
		return err == nil && strings.HasPrefix(got, "0 ") && strings.Contains(got, "5 values decrypted"), fmt.Sprint(got, err)
	})
	js("the panel is emptied", `document.getElementById('keyring-text').value`, "")
	if got := text("#run-input"); got != "{\n  \"card\": \"4242 4242 4242 4242\"\n}" {
		t.Fatalf("decrypted input %q", got)
	}
	if got := text("#run-state"); got != "{\n  \"customer\": \"ana@example.com\"\n}" {
		t.Fatalf("decrypted state %q", got)
	}
	js("charge's output, nested value indented in place", `document.querySelector('#steps tr.detail pre').textContent`,
		"{\n  \"receipt\": {\n    \"last4\": \"4242\",\n    \"receipt\": \"r-123\"\n  },\n  \"status\": \"charged\"\n}")
	js("the event's payload", `[...document.querySelectorAll('#steps tr.detail pre')].some(p => p.textContent === '{\n  "by": "bruno"\n}')`, true)
	run("close the panel", chromedp.Click(chromedp.CSS(`#keyring-summary`)))
	run("decrypted screenshot", shot("encrypted-run-decrypted.png"))

	// The tab keeps the keyring: a reload decrypts again, and an attempt's
	// input read later too.
	run("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#run-input .dec`)),
		chromedp.Click(chromedp.CSS(`#steps tr[data-step=charge] details.input[data-attempt="1"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#steps tr[data-step=charge] details.input pre .dec`)),
	)
	if got := text(`#steps tr[data-step=charge] details.input pre`); got != "{\n  \"card\": \"4242 4242 4242 4242\"\n}" {
		t.Fatalf("decrypted attempt input %q", got)
	}

	// A key the keyring lacks: the badge stays, saying why.
	run("a keyring without k2",
		chromedp.Click(chromedp.CSS(`#keyring-summary`)),
		chromedp.SetValue(chromedp.CSS(`#keyring-text`), ring.OldJSON),
		chromedp.Click(chromedp.CSS(`#keyring-use`)),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#run-input .enc[data-failed=true]`)),
	)
	js("why", `document.querySelector('#run-input .enc').title`, "cannot decrypt: the keyring has no key k2")
	run("forget it", chromedp.Click(chromedp.CSS(`#keyring-summary`)), chromedp.Click(chromedp.CSS(`#keyring-forget`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-input .enc`)))
	js("forgotten", `sessionStorage.getItem('cairn.keyring')`, nil)

	// No request carried a key: as sent, as received.
	mu.Lock()
	defer mu.Unlock()
	if len(sent) < 5 || len(received) < 5 {
		t.Fatalf("recorded %d requests sent, %d received: the recording is broken", len(sent), len(received))
	}
	for _, k := range ring.Secrets() {
		forms := []string{k, url.QueryEscape(k), strings.TrimRight(k, "="), base64.RawURLEncoding.EncodeToString(mustB64(t, k))}
		for _, list := range [][]string{sent, received} {
			for _, req := range list {
				for _, f := range forms {
					if strings.Contains(req, f) {
						t.Fatalf("a request carried a key:\n%s", req)
					}
				}
			}
		}
	}
	t.Logf("%d requests sent, %d received: none carried a key", len(sent), len(received))
}

func mustB64(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
