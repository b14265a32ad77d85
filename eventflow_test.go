package cairn

import (
	"errors"
	"testing"
	"time"
)

// Debounce and batch are checked with field-named errors.
func TestEventFlowValidation(t *testing.T) {
	sec := Duration(time.Second)
	on := []Trigger{{Event: "e"}}
	for _, c := range []struct {
		w     Workflow
		field string
	}{
		{Workflow{On: on, Debounce: &Debounce{Period: sec}, Batch: &EventBatch{MaxSize: 1, Timeout: sec}}, "w.batch"},
		{Workflow{Debounce: &Debounce{Period: sec}}, "w.on"},
		{Workflow{On: on, Debounce: &Debounce{Period: Duration(time.Millisecond)}}, "w.debounce.period"},
		{Workflow{On: on, Debounce: &Debounce{Period: 2 * sec, Timeout: sec}}, "w.debounce.timeout"},
		{Workflow{On: on, Debounce: &Debounce{Period: sec, Key: " "}}, "w.debounce.key"},
		{Workflow{On: on, Batch: &EventBatch{MaxSize: 0, Timeout: sec}}, "w.batch.max_size"},
		{Workflow{On: on, Batch: &EventBatch{MaxSize: MaxBatchSize + 1, Timeout: sec}}, "w.batch.max_size"},
		{Workflow{On: on, Batch: &EventBatch{MaxSize: 5}}, "w.batch.timeout"},
	} {
		w := c.w
		w.Name, w.Version, w.Steps = "wf", "1", []Step{{ID: "a"}}
		var ve ValidationError
		if err := w.Validate("w"); !errors.As(err, &ve) || ve[0].Field != c.field {
			t.Errorf("%+v %+v: got %v, want an error on %s", w.Debounce, w.Batch, err, c.field)
		}
	}
	ok := Workflow{Name: "wf", Version: "1", Steps: []Step{{ID: "a"}}, On: on, Debounce: &Debounce{Key: "event.payload.k", Period: sec}}
	if err := ok.Validate("w"); err != nil {
		t.Fatal(err)
	}
}
