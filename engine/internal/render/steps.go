package render

import (
	"fmt"

	"github.com/cairn-dev/cairn"
)

// Steps are a workflow's compiled step templates and expressions, by
// step id.
type Steps struct {
	Inputs    map[string]*Template   // each step's input (on_failure steps' too)
	Whens     map[string]*Template   // the when condition of each conditional step
	Nexts     map[string][]*Template // the if of each route of a looping step
	Items     map[string]*Template   // the items expression of each map step (nil: none)
	Ancestors map[string][]string    // the steps each step's templates may read
}

// CompileSteps compiles the templates and expressions of w's steps and of
// its on_failure steps, whose ancestors are every step of the workflow (a
// compensation sees what the failed run did) and their own dependencies.
// An error names its field under field.
func CompileSteps(w cairn.Workflow, field string) (Steps, error) {
	d := Steps{Inputs: map[string]*Template{}, Whens: map[string]*Template{}, Ancestors: map[string][]string{}, Nexts: map[string][]*Template{}}
	for i, s := range w.Steps {
		t, err := Compile(s.Input)
		if err != nil {
			return d, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].input", field, i), Message: err.Error()}}
		}
		d.Inputs[s.ID] = t
		if s.When != "" {
			c, err := Compile(Expr(s.When))
			if err != nil {
				return d, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].when", field, i), Message: err.Error()}}
			}
			d.Whens[s.ID] = c
		}
		d.Ancestors[s.ID] = w.Ancestors(s.ID)
		for j, n := range s.Next {
			c, err := Compile(Expr(n.If))
			if err != nil {
				return d, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].next[%d].if", field, i, j), Message: err.Error()}}
			}
			d.Nexts[s.ID] = append(d.Nexts[s.ID], c)
		}
		if s.Items != "" {
			if d.Items == nil {
				d.Items = map[string]*Template{}
			}
			c, err := Compile(Expr(s.Items))
			if err != nil {
				return d, cairn.ValidationError{{Field: fmt.Sprintf("%s.steps[%d].items", field, i), Message: err.Error()}}
			}
			d.Items[s.ID] = c
		}
	}
	var all []string
	for _, s := range w.Steps {
		all = append(all, s.ID)
	}
	sub := cairn.Workflow{Steps: w.OnFailure}
	for i, s := range w.OnFailure {
		t, err := Compile(s.Input)
		if err != nil {
			return d, cairn.ValidationError{{Field: fmt.Sprintf("%s.on_failure[%d].input", field, i), Message: err.Error()}}
		}
		d.Inputs[s.ID] = t
		d.Ancestors[s.ID] = append(append([]string{}, all...), sub.Ancestors(s.ID)...)
	}
	return d, nil
}
