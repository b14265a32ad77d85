package engine

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// The lease keeps the input it gave its worker when it is at most
// KeptInputBytes, for StepInput; a larger one is only measured. An
// attempt that was never claimed is not found.
func TestStepInputKeptWhenSmall(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		small := mustStart(t, e, "one", `{"n":1}`)
		l := claimOne(t, e, "w")
		got, err := e.StepInput(ctx, small, l.Step, l.Attempt)
		if err != nil || !got.Kept || string(got.Input) != string(l.Input) || got.Bytes != len(l.Input) {
			t.Fatalf("small input: %+v %v; lease input %s", got, err, l.Input)
		}
		big := `{"s":"` + strings.Repeat("x", KeptInputBytes) + `"}`
		run := mustStart(t, e, "one", big)
		l = claimOne(t, e, "w")
		got, err = e.StepInput(ctx, run, l.Step, l.Attempt)
		if err != nil || got.Kept || got.Input != nil || got.Bytes != len(l.Input) || got.Bytes <= KeptInputBytes {
			t.Fatalf("large input: kept %v, %d bytes, %v", got.Kept, got.Bytes, err)
		}
		if _, err := e.StepInput(ctx, run, l.Step, l.Attempt+1); !errs.IsNotFound(err) {
			t.Fatalf("an attempt never claimed: %v", err)
		}
		if _, err := e.StepInput(ctx, run, "no such step!", 1); err == nil {
			t.Fatal("a bad step id was accepted")
		}
	}, wallClock(), withWorkflows("w", single("one", cairn.Step{})))
}
