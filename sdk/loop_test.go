package sdk

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestLoopWithNext: a review step routes back to its draft until the
// draft is long enough; the run completes with the last review, each
// step's visits counted in the view and seen by the draft's template.
func TestLoopWithNext(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	type draft struct{ Words int }
	wf := Workflow("essay", "1").
		Task("draft", Handle(func(ctx StepContext, in struct{ Visit int }) (draft, error) {
			return draft{Words: 100 * in.Visit}, nil
		}), Input(map[string]string{"visit": "${visit}"})).
		Task("review", Handle(func(ctx StepContext, _ struct{}) (map[string]bool, error) {
			var d draft
			if err := ctx.Output("draft", &d); err != nil {
				return nil, err
			}
			return map[string]bool{"ok": d.Words >= 300}, nil
		}), After("draft"), Next("draft", "!steps.review.output.ok"), MaxVisits(5))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	run := start(t, e.c, "essay", StartOptions{})
	done := waitRun(t, e.c, run.ID, 30*time.Second)
	if done.Status != RunCompleted || string(done.Output) != `{"ok":true}` {
		t.Fatalf("run %s, output %s, error %+v", done.Status, done.Output, done.Error)
	}
	if d, r := done.Step("draft"), done.Step("review"); d.Visits != 3 || r.Visits != 3 {
		t.Fatalf("visits: draft %d, review %d; want 3 each", d.Visits, r.Visits)
	}
}
