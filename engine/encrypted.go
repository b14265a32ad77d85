package engine

import (
	"fmt"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// checkEncrypted refuses an encrypted workflow (cairn.Workflow.Encrypted)
// whose templates, conditions, items or flow-control keys read inside an
// encrypted value: the server only ever holds their ciphertext
// (render.Opaque). field names the definition in the error.
func checkEncrypted(w cairn.Workflow, field string) error {
	if !w.Encrypted {
		return nil
	}
	o := render.Opaque{Clear: map[string]bool{}}
	for _, k := range w.Clear {
		o.Clear[k] = true
	}
	refuse := func(f string, err error) error {
		return cairn.ValidationError{{Field: field + f, Message: err.Error()}}
	}
	steps := func(list []cairn.Step, name string) error {
		for i, s := range list {
			f := fmt.Sprintf(".%s[%d]", name, i)
			if err := o.CheckTemplate(s.Input); err != nil {
				return refuse(f+".input", err)
			}
			if s.When != "" {
				if err := o.CheckCondition(s.When); err != nil {
					return refuse(f+".when", err)
				}
			}
			if s.Items != "" {
				if err := o.CheckCondition(s.Items); err != nil {
					return refuse(f+".items", err)
				}
			}
			if s.Concurrency != nil {
				if err := o.CheckString(s.Concurrency.Key, false); err != nil {
					return refuse(f+".concurrency.key", err)
				}
			}
			if s.RateLimit != nil {
				if err := o.CheckString(s.RateLimit.Key, false); err != nil {
					return refuse(f+".rate_limit.key", err)
				}
			}
		}
		return nil
	}
	if err := steps(w.Steps, "steps"); err != nil {
		return err
	}
	if err := steps(w.OnFailure, "on_failure"); err != nil {
		return err
	}
	for i, c := range w.Concurrency {
		if err := o.CheckString(c.Key, false); err != nil {
			return refuse(fmt.Sprintf(".concurrency[%d].key", i), err)
		}
	}
	return nil
}
