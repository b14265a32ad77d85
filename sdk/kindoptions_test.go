package sdk

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// TestStepOptionsFollowTheKindTable: every step option of the builder is
// accepted on exactly the kinds the root table says take its field
// (cairn.KindOptions), and refused on the others with the table's message,
// so the SDK holds no list of its own.
func TestStepOptionsFollowTheKindTable(t *testing.T) {
	options := map[string]StepOption{
		"retry":                     Retry(RetryPolicy{MaxAttempts: 2}),
		"delivery":                  AtMostOnce(),
		"timeout":                   Timeout(time.Second),
		"max_deliveries":            MaxDeliveries(3),
		"concurrency":               Concurrency("", 1),
		"rate_limit":                RateLimit("", 1, time.Second),
		"priority":                  Priority(1),
		"max_concurrency":           MaxConcurrency(2),
		"tolerated_failures":        ToleratedFailures(1),
		"tolerated_failure_percent": ToleratedFailurePercent(10),
		"child_version":             ChildVersion("1"),
	}
	nop := func(StepContext) (any, error) { return nil, nil }
	build := map[cairn.StepKind]func(d *WorkflowDef, o StepOption){
		cairn.KindTask:  func(d *WorkflowDef, o StepOption) { d.Task("s", nop, o) },
		cairn.KindWait:  func(d *WorkflowDef, o StepOption) { d.Wait("s", "go", o) },
		cairn.KindSleep: func(d *WorkflowDef, o StepOption) { d.Sleep("s", time.Second, o) },
		cairn.KindMap:   func(d *WorkflowDef, o StepOption) { d.Map("s", "${input.xs}", nop, o) },
		cairn.KindChild: func(d *WorkflowDef, o StepOption) { d.Child("s", "other", o) },
		cairn.KindFunction: func(d *WorkflowDef, o StepOption) {
			d.Function("s", func(*Durable) (any, error) { return nil, nil }, o)
		},
	}
	table := cairn.KindOptions()
	for _, kind := range cairn.StepKind("").Values() {
		if build[kind] == nil {
			t.Errorf("kind %s has no builder in this test", kind)
			continue
		}
		for field, o := range options {
			d := Workflow("w", "1")
			build[kind](d, o)
			_, err := d.Definition()
			takes := slices.Contains(table[kind], field)
			if kind == cairn.KindWait && field == "timeout" {
				takes = true // Timeout on a wait sets its wait_timeout
			}
			switch {
			case takes && err != nil:
				t.Errorf("%s step, option %s: refused: %v", kind, field, err)
			case !takes && (err == nil || !strings.Contains(err.Error(), kind.Takes(field).Error())):
				t.Errorf("%s step, option %s: got %v, want %q", kind, field, err, kind.Takes(field))
			}
		}
	}
}
