package ui_test

import (
	"context"
	"strings"
	"testing"

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
