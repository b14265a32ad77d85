package sdk

import (
	"maps"
	"time"

	"github.com/cairn-dev/cairn"
)

// Flow control: concurrency limits, rate limits and priorities
// (docs/SDK.md, "Flow control").

// Concurrency limits how many attempts of a task step hold a lease at once
// among those whose key renders equal. key is a template such as
// "${input.customer}" ("" for one limit across all runs of the step).
func Concurrency(key string, limit int) StepOption {
	return takes("concurrency", func(s *cairn.Step) { s.Concurrency = &cairn.ConcurrencyLimit{Key: key, Limit: limit} })
}

// RateLimit hands out at most limit attempts of a task step per period
// among those whose key renders equal, evenly spaced (period/limit apart);
// attempts beyond the rate wait. RateLimitBurst lets some go at once.
func RateLimit(key string, limit int, period time.Duration) StepOption {
	return RateLimitBurst(key, limit, period, 0)
}

// RateLimitBurst is RateLimit letting burst attempts go at once: any window
// of one period then holds at most limit+burst-1.
func RateLimitBurst(key string, limit int, period time.Duration, burst int) StepOption {
	return takes("rate_limit", func(s *cairn.Step) {
		s.RateLimit = &cairn.RateLimit{Key: key, Limit: limit, Period: cairn.Duration(period), Burst: burst}
	})
}

// Priority overrides the run's priority for a task step, in [-100, 100];
// higher is offered first.
func Priority(p int) StepOption {
	return func(s *cairn.Step) error {
		if err := s.Kind.Takes("priority"); err != nil {
			return err
		}
		if err := cairn.CheckPriority(p); err != nil {
			return err
		}
		s.Priority = &p
		return nil
	}
}

// Concurrency limits the task attempts of all runs of the workflow that
// hold a lease at once: per rendered key, or with key "" one global limit
// for the workflow. A workflow takes up to 4.
func (d *WorkflowDef) Concurrency(key string, limit int) *WorkflowDef {
	d.wf.Concurrency = append(d.wf.Concurrency, cairn.ConcurrencyLimit{Key: key, Limit: limit})
	return d
}

// RequiresLabels routes the step to workers registered with every one of
// labels (WithLabels): others are never offered it, and while no live
// worker has them the run says so (NoLiveWorker). Task, map and function
// steps.
func RequiresLabels(labels map[string]string) StepOption {
	return func(s *cairn.Step) error {
		if err := s.Kind.Takes("requires_labels"); err != nil {
			return err
		}
		s.RequiresLabels = maps.Clone(labels)
		return nil
	}
}
