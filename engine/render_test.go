package engine

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
)

// TestRenderLimitFailsStepWithRenderError: through the engine, a template
// over its budget fails the step with class render_error, naming the limit.
func TestRenderLimitFailsStepWithRenderError(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w", single("heavy", cairn.Step{Input: json.RawMessage(`{"m": "${input.xs.map(x, input.xs.map(y, x*y))}"}`)})))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "heavy", ints1500())
	if ls, _ := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 200}); len(ls) != 0 {
		t.Fatal("a step whose input is over its budget was offered")
	}
	r := getRun(t, e, run)
	if r.Status != cairn.RunFailed || r.Error == nil || r.Error.Class != cairn.ClassRenderError ||
		!strings.Contains(r.Error.Message, "exceeds the CEL cost limit of 1000000") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	t.Log(r.Error.Message)
}

// ints1500 is {"xs": [1, 2, …, 1500]}.
func ints1500() string {
	var b strings.Builder
	b.WriteString(`{"xs":[`)
	for i := 1; i <= 1500; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`]}`)
	return b.String()
}
