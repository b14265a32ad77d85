package cairn

import "strings"

// Limits of map steps.
const (
	// MaxMapItems is the most elements a map step's items may render to;
	// the rendered array is also bounded by the engine's rendered-template
	// cap (1 MiB by default).
	MaxMapItems = 10_000
	// DefaultMapConcurrency is a map step's max_concurrency when unset.
	DefaultMapConcurrency = 100
	// MaxMapConcurrency is the largest max_concurrency.
	MaxMapConcurrency = 1000
)

// EffectiveMaxConcurrency is a map step's max_concurrency, its default
// when unset.
func (s *Step) EffectiveMaxConcurrency() int {
	if s.MaxConcurrency <= 0 {
		return DefaultMapConcurrency
	}
	return s.MaxConcurrency
}

// ToleratedOf is how many of n items of a map step may fail without
// failing the step: the larger of tolerated_failures and
// tolerated_failure_percent of n (rounded down).
func (s *Step) ToleratedOf(n int) int {
	t := s.ToleratedFailures
	if p := int(float64(n) * s.ToleratedFailurePercent / 100); p > t {
		t = p
	}
	return t
}

func checkMap(s *Step, add func(field, format string, args ...any)) {
	if strings.TrimSpace(s.Items) == "" {
		add(".items", "a map step needs items: a CEL expression that renders the array to map over, like ${steps.fetch.output.items}")
	} else if len(s.Items) > 2000 {
		add(".items", "at most 2000 bytes")
	}
	if s.MaxConcurrency < 0 || s.MaxConcurrency > MaxMapConcurrency {
		add(".max_concurrency", "must be between 1 and %d (0: the default %d)", MaxMapConcurrency, DefaultMapConcurrency)
	}
	if s.ToleratedFailures < 0 {
		add(".tolerated_failures", "must not be negative")
	}
	if s.ToleratedFailurePercent < 0 || s.ToleratedFailurePercent > 100 {
		add(".tolerated_failure_percent", "must be between 0 and 100")
	}
}

func checkChild(s *Step, add func(field, format string, args ...any)) {
	if s.Workflow == "" {
		add(".workflow", "a child step needs the name of the workflow its child run runs")
	} else if !nameRE.MatchString(s.Workflow) || len(s.Workflow) > 128 {
		add(".workflow", "must match %s and be at most 128 bytes", nameRE)
	}
	if s.ChildVersion != "" && (!versionRE.MatchString(s.ChildVersion) || len(s.ChildVersion) > 64) {
		add(".child_version", "must match %s and be at most 64 bytes", versionRE)
	}
}
