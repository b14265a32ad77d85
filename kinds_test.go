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
	if err == nil || !strings.Contains(err.Error(), `wf.steps[0].kind: unknown kind "nap" (want task, wait or sleep)`) {
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
