package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// An attempt's summary, sent with its fail or its complete, is recorded on
// that attempt and nowhere the flow reads; one over 4 KiB is refused
// naming the field, and nothing is recorded.
func TestAttemptSummaries(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		register(t, e, "w", cairn.Workflow{Name: "sum", Version: "1", Steps: []cairn.Step{
			{ID: "a", Retry: &cairn.RetryPolicy{InitialBackoff: cairn.Duration(time.Millisecond)}},
		}})
		run := mustStart(t, e, "sum", `{}`)
		l := claimOne(t, e, "w")
		if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable, Message: "x"},
			Summary: json.RawMessage(`{"fetched":2,"then":"timeout"}`)}); err != nil {
			t.Fatal(err)
		}
		l = claimOne(t, e, "w")
		big := json.RawMessage(`"` + strings.Repeat("x", cairn.MaxSummaryBytes) + `"`)
		var v cairn.ValidationError
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Summary: big}); !errors.As(err, &v) || v[0].Field != "summary" {
			t.Fatalf("a summary over the limit: %v, want an error naming summary", err)
		}
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Summary: json.RawMessage(`"3 rows"`)}); err != nil {
			t.Fatal(err)
		}
		r := getRun(t, e, run)
		a := stepOf(r, "a").Attempts
		if r.Status != cairn.RunCompleted || len(a) != 2 || string(a[0].Summary) != `{"fetched":2,"then":"timeout"}` || string(a[1].Summary) != `"3 rows"` {
			t.Fatalf("run %s attempts %+v", r.Status, a)
		}
		if strings.Contains(string(r.Output), "rows") {
			t.Fatalf("the summary reached the output: %s", r.Output)
		}
	}, wallClock())
}
