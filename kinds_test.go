package cairn

import (
	"reflect"
	"slices"
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
	if err == nil || !strings.Contains(err.Error(), `wf.steps[0].kind: unknown kind "nap" (want task, wait, sleep, map, child or function)`) {
		t.Fatalf("unknown kind: %v", err)
	}
}

func TestKindChecks(t *testing.T) {
	cases := []struct {
		step Step
		want string // "" for valid
	}{
		{Step{ID: "a"}, ""},
		{Step{ID: "a", Event: "e"}, "w.steps[0].event: event applies to wait steps only"},
		{Step{ID: "a", Kind: KindWait, Event: "go"}, ""},
		{Step{ID: "a", Kind: KindWait}, "w.steps[0].event: a wait step needs the event name it waits for"},
		{Step{ID: "a", Kind: KindWait, Event: "a\x01"}, "w.steps[0].event: must be valid UTF-8"},
		{Step{ID: "a", Kind: KindWait, Event: "go", WaitTimeout: -1}, "w.steps[0].wait_timeout: must not be negative"},
		{Step{ID: "a", Kind: KindWait, Event: "go", Retry: &RetryPolicy{}}, "w.steps[0].retry: retry applies to task, map and function steps only"},
		{Step{ID: "a", Kind: KindSleep, Duration: Duration(1)}, ""},
		{Step{ID: "a", Kind: KindSleep}, "w.steps[0].duration: a sleep step needs a positive duration"},
		{Step{ID: "a", Kind: KindMap, Items: "${input.xs}", MaxConcurrency: 5, ToleratedFailurePercent: 10, Retry: &RetryPolicy{MaxAttempts: 2}}, ""},
		{Step{ID: "a", Kind: KindMap}, "w.steps[0].items: a map step needs items"},
		{Step{ID: "a", Kind: KindMap, Items: "x", MaxConcurrency: 5000}, "w.steps[0].max_concurrency: must be between 1 and 1000"},
		{Step{ID: "a", Kind: KindMap, Items: "x", ToleratedFailurePercent: 150}, "w.steps[0].tolerated_failure_percent: must be between 0 and 100"},
		{Step{ID: "a", Kind: KindMap, Items: "x", ToleratedFailures: -1}, "w.steps[0].tolerated_failures: must not be negative"},
		{Step{ID: "a", Items: "x"}, "w.steps[0].items: items applies to map steps only"},
		{Step{ID: "a", Kind: KindChild, Workflow: "billing"}, ""},
		{Step{ID: "a", Kind: KindChild}, "w.steps[0].workflow: a child step needs the name of the workflow"},
		{Step{ID: "a", Kind: KindChild, Workflow: "b", ChildVersion: "/x"}, "w.steps[0].child_version: must match"},
		{Step{ID: "a", Kind: KindChild, Workflow: "b", Retry: &RetryPolicy{}}, "w.steps[0].retry: retry applies to task, map and function steps only"},
		{Step{ID: "a", Workflow: "b"}, "w.steps[0].workflow: workflow applies to child steps only"},
		{Step{ID: "a", Kind: KindSleep, Duration: Duration(1), Priority: new(int)}, "w.steps[0].priority: priority applies to task and function steps only"},
		{Step{ID: "a", Kind: KindMap, Items: "x", Concurrency: &ConcurrencyLimit{Limit: 1}}, "w.steps[0].concurrency: concurrency applies to task and function steps only"},
		{Step{ID: "a", Kind: KindWait, Event: "go", Duration: Duration(1)}, "w.steps[0].duration: duration applies to sleep steps only"},
		{Step{ID: "a", Kind: KindChild, Workflow: "b", MaxConcurrency: 3}, "w.steps[0].max_concurrency: max_concurrency applies to map steps only"},
		{Step{ID: "a", Kind: KindFunction, Retry: &RetryPolicy{MaxAttempts: 1}, Timeout: Duration(1), Priority: new(int)}, ""},
		{Step{ID: "a", Kind: KindFunction, Delivery: AtMostOnce}, "w.steps[0].delivery: delivery applies to task and map steps only"},
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

// TestKindOptionsTable: every optional field of Step is in the table's
// index (stepOptions), every field a kind takes is one of them, and a
// step setting a field its kind does not take is refused naming the field
// and the kinds that take it — for every kind and field, from one table.
func TestKindOptionsTable(t *testing.T) {
	for k, opts := range kindOptions {
		if !slices.Contains(k.Values(), k) {
			t.Errorf("kindOptions lists kind %q, which Values does not", k)
		}
		for _, o := range opts {
			if stepOptions[o] == nil {
				t.Errorf("kind %s takes %q, which stepOptions cannot tell set", k, o)
			}
		}
	}
	for _, k := range StepKind("").Values() {
		if _, ok := kindOptions[k]; !ok {
			t.Errorf("kind %s has no entry in kindOptions", k)
		}
	}
	// Every JSON field of Step that is not common to all kinds is indexed.
	common := map[string]bool{"id": true, "kind": true, "after": true, "input": true, "when": true}
	st := reflect.TypeFor[Step]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if !common[name] && stepOptions[name] == nil {
			t.Errorf("Step field %s (json %q) is in no kind's options", st.Field(i).Name, name)
		}
	}
	for option := range stepOptions {
		for _, k := range StepKind("").Values() {
			err := k.Takes(option)
			if (err == nil) != slices.Contains(kindOptions[k], option) {
				t.Errorf("%s.Takes(%q) = %v", k, option, err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), option+" applies to ") {
				t.Errorf("%s.Takes(%q) = %q, want it to name the field", k, option, err)
			}
		}
	}
	if err := StepKind("").Takes("retry"); err != nil {
		t.Errorf("an unset kind is a task: %v", err)
	}
	if err := KindTask.Takes("nonsense"); err == nil {
		t.Error("an unknown option was accepted")
	}
}
