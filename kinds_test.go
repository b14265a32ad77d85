package cairn

import (
	"strings"
	"testing"
)

// Every kind has its check, and a step of an unknown kind is refused
// naming the kinds there are.
func TestEveryKindIsChecked(t *testing.T) {
	for _, k := range StepKind("").Values() {
		if kindChecks[k] == nil {
			t.Errorf("kind %s has no check in kindChecks", k)
		}
	}
	if len(kindChecks) != len(StepKind("").Values()) {
		t.Errorf("kindChecks has kinds Values does not list")
	}
	w := Workflow{Name: "w", Version: "1", Steps: []Step{{ID: "a", Kind: "nap"}}}
	err := w.Validate("wf")
	if err == nil || !strings.Contains(err.Error(), `wf.steps[0].kind: unknown kind "nap" (want task, wait, sleep, map or child)`) {
		t.Fatalf("unknown kind: %v", err)
	}
}

func TestKindChecks(t *testing.T) {
	cases := []struct {
		step Step
		want string // "" for valid
	}{
		{Step{ID: "a"}, ""},
		{Step{ID: "a", Event: "e"}, "w.steps[0]: a task step takes no event, wait_timeout or duration"},
		{Step{ID: "a", Kind: KindWait, Event: "go"}, ""},
		{Step{ID: "a", Kind: KindWait}, "w.steps[0].event: a wait step needs the event name it waits for"},
		{Step{ID: "a", Kind: KindWait, Event: "a\x01"}, "w.steps[0].event: must be valid UTF-8"},
		{Step{ID: "a", Kind: KindWait, Event: "go", WaitTimeout: -1}, "w.steps[0].wait_timeout: must not be negative"},
		{Step{ID: "a", Kind: KindWait, Event: "go", Retry: &RetryPolicy{}}, "w.steps[0]: delivery, retry, timeout and max_deliveries apply to task steps only"},
		{Step{ID: "a", Kind: KindSleep, Duration: Duration(1)}, ""},
		{Step{ID: "a", Kind: KindSleep}, "w.steps[0].duration: a sleep step needs a positive duration"},
		{Step{ID: "a", Kind: KindMap, Items: "${input.xs}", MaxConcurrency: 5, ToleratedFailurePercent: 10, Retry: &RetryPolicy{MaxAttempts: 2}}, ""},
		{Step{ID: "a", Kind: KindMap}, "w.steps[0].items: a map step needs items"},
		{Step{ID: "a", Kind: KindMap, Items: "x", MaxConcurrency: 5000}, "w.steps[0].max_concurrency: must be between 1 and 1000"},
		{Step{ID: "a", Kind: KindMap, Items: "x", ToleratedFailurePercent: 150}, "w.steps[0].tolerated_failure_percent: must be between 0 and 100"},
		{Step{ID: "a", Kind: KindMap, Items: "x", ToleratedFailures: -1}, "w.steps[0].tolerated_failures: must not be negative"},
		{Step{ID: "a", Items: "x"}, "w.steps[0]: items, max_concurrency and tolerated_failures apply to map steps only"},
		{Step{ID: "a", Kind: KindChild, Workflow: "billing"}, ""},
		{Step{ID: "a", Kind: KindChild}, "w.steps[0].workflow: a child step needs the name of the workflow"},
		{Step{ID: "a", Kind: KindChild, Workflow: "b", ChildVersion: "/x"}, "w.steps[0].child_version: must match"},
		{Step{ID: "a", Kind: KindChild, Workflow: "b", Retry: &RetryPolicy{}}, "w.steps[0]: delivery, retry, timeout and max_deliveries apply to task steps only"},
		{Step{ID: "a", Workflow: "b"}, "w.steps[0]: workflow and child_version apply to child steps only"},
	}
	for _, c := range cases {
		w := Workflow{Name: "w", Version: "1", Steps: []Step{c.step}}
		err := w.Validate("w")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.step, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: got %v, want %q", c.step, err, c.want)
		}
	}
}
