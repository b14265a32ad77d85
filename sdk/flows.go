package sdk

import (
	"github.com/cairn-dev/cairn"
)

// Map adds a map step: h runs once per element of the array that items
// (a CEL expression, bare or as ${…}) renders, at most MaxConcurrency at
// a time, each element with the step's retry policy; the step's output is
// the array of the bodies' outputs in input order. The input template
// (Input) sees item and index; without one a body's input is its
// element. StepContext.Info().Item is the element's index.
//
//	Map("pack", "steps.order.output.lines", sdk.Handle(pack), sdk.After("order"),
//		sdk.MaxConcurrency(20), sdk.ToleratedFailures(1))
//
// At most cairn.MaxMapItems elements; a failed element fails the step
// (and the run) unless ToleratedFailures or ToleratedFailurePercent
// allows it, when its output is null.
func (d *WorkflowDef) Map(id, items string, h Handler, opts ...StepOption) *WorkflowDef {
	return d.served(cairn.Step{ID: id, Kind: cairn.KindMap, Items: items}, h, opts)
}

// Child adds a step that starts a run of workflow (its newest version
// when the step starts, or ChildVersion's) with the step's rendered input
// and ends with it: completed with the child's output, failed with the
// child's error. A retried start finds the same child; cancelling the
// run cancels the child.
func (d *WorkflowDef) Child(id, workflow string, opts ...StepOption) *WorkflowDef {
	return d.add(cairn.Step{ID: id, Kind: cairn.KindChild, Workflow: workflow}, opts)
}

// OnFailure adds a compensation step (a saga): a task step that runs only
// when the run fails, after the other on_failure steps it names in After.
// Its templates and StepContext.Output see the failed run's input, state
// and completed steps' outputs. The run still ends failed, with its
// original error; Run.Compensation says how the compensation went.
func (d *WorkflowDef) OnFailure(id string, h Handler, opts ...StepOption) *WorkflowDef {
	d.compensation = true
	defer func() { d.compensation = false }()
	return d.Task(id, h, opts...)
}

// MaxConcurrency bounds how many items of a map step run at once
// [cairn.DefaultMapConcurrency].
func MaxConcurrency(n int) StepOption {
	return takes("max_concurrency", func(s *cairn.Step) { s.MaxConcurrency = n })
}

// ToleratedFailures lets n items of a map step fail without failing it.
func ToleratedFailures(n int) StepOption {
	return takes("tolerated_failures", func(s *cairn.Step) { s.ToleratedFailures = n })
}

// ToleratedFailurePercent lets pct percent of a map step's items fail
// without failing it.
func ToleratedFailurePercent(pct float64) StepOption {
	return takes("tolerated_failure_percent", func(s *cairn.Step) { s.ToleratedFailurePercent = pct })
}

// ChildVersion pins the version of a child step's workflow.
func ChildVersion(v string) StepOption {
	return takes("child_version", func(s *cairn.Step) { s.ChildVersion = v })
}

func itemIndex(p *int64) int {
	if p == nil {
		return -1
	}
	return int(*p)
}
