package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
)

// TestTriggerAndEventShown: the workflow page lists a version's triggers,
// and the page of a run an event started names the event.
func TestTriggerAndEventShown(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	wf := cairn.Workflow{Name: "signup", Version: "1", Steps: []cairn.Step{{ID: "welcome"}},
		On: []cairn.Trigger{{Event: "user.created", If: "event.payload.plan == 'pro'"}}}
	f.registerFor("w1", wf)
	res, err := f.e.Publish(context.Background(), cairn.PublishRequest{Name: "user.created", ID: "u<1>", Payload: []byte(`{"plan":"pro"}`)})
	if err != nil || len(res.Runs) != 1 {
		t.Fatalf("publish: %+v %v", res, err)
	}
	_, body, _ := f.get("/ui/workflows/signup/1", "")
	if want := `<dd id="def-triggers">event <code>user.created</code> if <code>event.payload.plan == &#39;pro&#39;</code></dd>`; !strings.Contains(body, want) {
		t.Errorf("workflow page lacks %s", want)
	}
	_, body, _ = f.get("/ui/runs/"+res.Runs[0].Run, "")
	if want := `<dd id="run-event"><code>user.created</code> (id <code>u&lt;1&gt;</code>)</dd>`; !strings.Contains(body, want) {
		t.Errorf("run page lacks %s", want)
	}
}

// TestEventsPage: the events page lists what each event does — the
// triggers and cancel_on of every workflow's newest version, by event —
// and offers the publish form only to a key that may execute.
func TestEventsPage(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.registerFor("w1", cairn.Workflow{Name: "signup", Version: "1", Steps: []cairn.Step{{ID: "a"}},
		On: []cairn.Trigger{{Event: "user.created"}}})
	f.registerFor("w1", cairn.Workflow{Name: "signup", Version: "2", Steps: []cairn.Step{{ID: "a"}},
		On:       []cairn.Trigger{{Event: "user.created", If: "event.payload.plan == 'pro'"}},
		CancelOn: []cairn.CancelOn{{Event: "user.deleted", If: "event.payload.id == input.id", Timeout: cairn.Duration(time.Hour)}}})
	f.registerFor("w1", cairn.Workflow{Name: "audit", Version: "1", Steps: []cairn.Step{{ID: "a"}},
		On: []cairn.Trigger{{Event: "user.created"}}})
	status, body, _ := f.get("/ui/events", "")
	if status != 200 {
		t.Fatalf("GET /ui/events: %d %s", status, body)
	}
	for _, want := range []string{
		`<tr data-event="user.created" data-workflow="audit">`,
		`<a href="/ui/workflows/signup/2">signup@2</a>`,
		`<td><code>event.payload.plan == &#39;pro&#39;</code></td>`,
		`cancels its running runs (within 1h0m0s of their start)`,
		`<form id="publish-form"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("events page lacks %s", want)
		}
	}
	if strings.Contains(body, "signup@1") {
		t.Error("the events page lists an older version's trigger")
	}
	audit, signup := strings.Index(body, `data-workflow="audit"`), strings.Index(body, `data-workflow="signup"`)
	if audit < 0 || signup < 0 || audit > signup {
		t.Error("rows of one event are not in workflow order")
	}
}

// TestDebounceAndBatchShown: the workflow page shows a version's debounce
// or batch beside its triggers.
func TestDebounceAndBatchShown(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	on := []cairn.Trigger{{Event: "typed"}}
	f.registerFor("w1",
		cairn.Workflow{Name: "quiet", Version: "1", Steps: []cairn.Step{{ID: "save"}}, On: on,
			Debounce: &cairn.Debounce{Key: "event.payload.doc", Period: cairn.Duration(5e9)}},
		cairn.Workflow{Name: "bulk", Version: "1", Steps: []cairn.Step{{ID: "save"}}, On: on,
			Batch: &cairn.EventBatch{MaxSize: 50, Timeout: cairn.Duration(10e9)}})
	for page, want := range map[string]string{
		"/ui/workflows/quiet/1": `<dd id="def-debounce">key event.payload.doc, period 5s</dd>`,
		"/ui/workflows/bulk/1":  `<dd id="def-batch">max 50, timeout 10s</dd>`,
	} {
		if _, body, _ := f.get(page, ""); !strings.Contains(body, want) {
			t.Errorf("%s lacks %s", page, want)
		}
	}
}
