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
