package sdk

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
)

// Debounce and batch through the SDK: publishes join windows; each
// debounced key starts one run with its last payload, and a batch one run
// with the list of payloads.
func TestDebounceAndBatchOptions(t *testing.T) {
	e := newEnv(t, fastReap())
	debounced := Workflow("quiet-go", "1").On("typed", "").Debounce("event.payload.doc", time.Second, 0).Wait("hold", "never")
	bulk := Workflow("bulk-go", "1").On("typed", "").Batch("", 3, time.Second).Wait("hold", "never")
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(debounced, bulk))
	for i := range 3 {
		res, err := e.c.Publish(t.Context(), "typed", map[string]int{"doc": 1, "n": i}, PublishOptions{ID: fmt.Sprint("p", i)})
		if err != nil || len(res.Runs) != 2 || res.Runs[0].Window == "" || res.Runs[1].Window == "" {
			t.Fatalf("publish: %+v %v, want two windows joined", res, err)
		}
	}
	inputs := map[string]string{}
	testutil.Eventually(t, 30*time.Second, "one debounced run and one batch", func() (bool, string) {
		for _, wf := range []string{"quiet-go", "bulk-go"} {
			page, err := e.c.List(t.Context(), ListOptions{Workflow: wf})
			if err != nil || len(page.Runs) != 1 {
				return false, fmt.Sprint(wf, page, err)
			}
			r, err := e.c.Get(t.Context(), page.Runs[0].ID)
			if err != nil {
				return false, err.Error()
			}
			inputs[wf] = string(r.Input)
		}
		return true, ""
	})
	var list []map[string]int
	if inputs["quiet-go"] != `{"doc":1,"n":2}` || json.Unmarshal([]byte(inputs["bulk-go"]), &list) != nil || len(list) != 3 || list[2]["n"] != 2 {
		t.Fatalf("inputs %v: want the last payload, and the three in publish order", inputs)
	}
}
