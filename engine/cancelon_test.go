package engine

import (
	"encoding/json"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
)

// A published event cancels the running runs whose workflow's cancel_on
// matches it — its if compares the event with each run's input — and no
// other; publishing it again cancels nothing more, and an ended run's
// index entry is dropped.
func TestCancelOnEvent(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		ctx, e := h.ctx, h.e
		register(t, e, "w", cairn.Workflow{Name: "order", Version: "1", Steps: []cairn.Step{{ID: "pack"}},
			CancelOn: []cairn.CancelOn{{Event: "order.cancelled", If: "event.payload.order == input.order"}}})
		one := mustStart(t, e, "order", `{"order":1}`)
		two := mustStart(t, e, "order", `{"order":2}`)
		publish := func(payload string) *cairn.PublishResult {
			res, err := h.peer().Publish(ctx, cairn.PublishRequest{Name: "order.cancelled", ID: "e-" + payload, Payload: json.RawMessage(payload)})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := publish(`{"order":1}`); len(res.Cancelled) != 1 || res.Cancelled[0] != one {
			t.Fatalf("cancelled %v, want [%s]", res.Cancelled, one)
		}
		if r := getRun(t, e, one); r.Status != cairn.RunCancelled {
			t.Fatalf("run one is %s", r.Status)
		}
		if r := getRun(t, e, two); r.Status != cairn.RunRunning {
			t.Fatalf("run two is %s", r.Status)
		}
		if res := publish(`{"order":1}`); len(res.Cancelled) != 0 {
			t.Fatalf("a second publish cancelled %v", res.Cancelled)
		}
		if page, err := e.store.List(ctx, blob.ListOptions{Prefix: e.keys.CancelsOf("order.cancelled")}); err != nil || len(page.Objects) != 1 {
			t.Fatalf("index entries %d (%v), want run two's only", len(page.Objects), err)
		}
	})
}
