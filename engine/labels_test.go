package engine

import (
	"context"
	"testing"

	"github.com/cairn-dev/cairn"
)

// A step that requires labels is offered only to a worker registered with
// them: a worker without is offered the run's other step but never this
// one, and while no live worker has the labels the run says so.
func TestLabelRouting(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		wf := cairn.Workflow{Name: "gpu", Version: "1", Steps: []cairn.Step{
			{ID: "train", RequiresLabels: map[string]string{"gpu": "true", "region": "eu"}},
			{ID: "notify"},
		}}
		reg := func(worker string, labels map[string]string) {
			if _, err := e.Register(ctx, cairn.RegisterRequest{WorkerID: worker, Labels: labels, Workflows: []cairn.Workflow{wf}}); err != nil {
				t.Fatal(err)
			}
		}
		reg("cpu", map[string]string{"region": "eu"})
		reg("gpu-us", map[string]string{"gpu": "true", "region": "us"})
		run := mustStart(t, e, "gpu", `{}`)
		for _, w := range []string{"cpu", "gpu-us"} {
			ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: w, Max: 2, WaitMs: 200})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				if l.Step == "train" {
					t.Fatalf("worker %s without the labels was offered train", w)
				}
				if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if r := getRun(t, e, run); !r.NoLiveWorker {
			t.Fatalf("no live worker has gpu=true, region=eu, yet the run does not say so (steps %+v)", r.Steps)
		}
		reg("gpu-eu", map[string]string{"gpu": "true", "region": "eu", "extra": "x"})
		l := claimOne(t, e, "gpu-eu")
		if l.Step != "train" {
			t.Fatalf("gpu-eu got %s", l.Step)
		}
		if _, err := e.Complete(context.Background(), l.ID, cairn.CompleteRequest{}); err != nil {
			t.Fatal(err)
		}
		if r := getRun(t, e, run); r.Status != cairn.RunCompleted {
			t.Fatalf("run %s", r.Status)
		}
	})
}

// requires_labels is a task, map and function option, checked at
// registration.
func TestLabelValidation(t *testing.T) {
	w := single("w", cairn.Step{ID: "s", Kind: cairn.KindSleep, Duration: cairn.Duration(1), RequiresLabels: map[string]string{"gpu": "true"}})
	if err := w.Validate("workflows[0]"); err == nil {
		t.Fatal("a sleep step requiring labels was accepted")
	}
	w = single("w", cairn.Step{ID: "s", RequiresLabels: map[string]string{"": "x"}})
	if err := w.Validate("workflows[0]"); err == nil {
		t.Fatal("an empty label key was accepted")
	}
}
