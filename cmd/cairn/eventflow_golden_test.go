package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestGoldenEventFlow: a debounced and a batched workflow as the CLI shows
// them, publishes that join their windows, and the one run each window
// starts when it closes — the debounce window when the server's clock is
// moved past it (testdata/events_*.golden).
func TestGoldenEventFlow(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	n := &normalizer{ids: map[string]string{}}
	quiet := sdk.Workflow("quiet", "1").On("typed", "").Debounce("event.payload.doc", time.Minute, time.Hour).Wait("hold", "never")
	bulk := sdk.Workflow("bulk", "1").On("typed", "event.payload.doc == 'a'").Batch("", 2, time.Hour).Wait("hold", "never")
	register(t, srv.URL, "cli-events", quiet, bulk)
	golden(t, "events_workflows", n.run(t, srv.URL, "workflows", "quiet")+n.run(t, srv.URL, "workflows", "bulk"))
	var pub strings.Builder
	for i, doc := range []string{"a", "a", "b"} {
		pub.WriteString(n.run(t, srv.URL, "events", "publish", "typed", "--payload", fmt.Sprintf(`{"doc":%q,"n":%d}`, doc, i), "--id", fmt.Sprint("t", i)))
	}
	golden(t, "events_publish", pub.String())
	// The windows are in the server's clock, moved past them here: the
	// publishes above join them however long this machine took between
	// them.
	srv.Advance(2 * time.Minute)
	c := testClient(t, srv.URL)
	testutil.Eventually(t, 30*time.Second, "a run per debounced key and one batch", func() (bool, string) {
		q, _ := c.List(t.Context(), sdk.ListOptions{Workflow: "quiet"})
		b, _ := c.List(t.Context(), sdk.ListOptions{Workflow: "bulk"})
		return q != nil && b != nil && len(q.Runs) == 2 && len(b.Runs) == 1, fmt.Sprintf("%+v %+v", q, b)
	})
	golden(t, "events_runs", n.run(t, srv.URL, "runs", "list", "--workflow", "quiet")+n.run(t, srv.URL, "runs", "list", "--workflow", "bulk"))
	inputs := map[string]string{}
	for _, wf := range []string{"quiet", "bulk"} {
		page, _ := c.List(t.Context(), sdk.ListOptions{Workflow: wf})
		for _, s := range page.Runs {
			r, err := c.Get(t.Context(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			inputs[wf+" "+r.Event.ID] = string(r.Input)
		}
	}
	want := map[string]string{"quiet t1": `{"doc":"a","n":1}`, "quiet t2": `{"doc":"b","n":2}`, "bulk t1": `[{"doc":"a","n":0},{"doc":"a","n":1}]`}
	if fmt.Sprint(inputs) != fmt.Sprint(want) {
		t.Fatalf("runs' inputs %v, want %v", inputs, want)
	}
}
