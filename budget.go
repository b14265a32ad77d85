package cairn

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Budget limits what a run may consume: its cost (priced by the engine's
// price book), its tokens, or usage counters. The engine checks it each
// time an attempt's usage is recorded — on complete, on fail (a failed
// attempt's usage counts) and on a durable function's suspension — and a
// run that goes over fails at once with class budget_exceeded (its
// compensation, if any, runs). A child run has its own budget.
type Budget struct {
	CostUSD  float64          `json:"cost_usd,omitempty" minimum:"0" doc:"Largest cost in US dollars (the run's usage as the price book prices it)."`
	Tokens   int64            `json:"tokens,omitempty" minimum:"0" doc:"Largest number of tokens, input and output, over every model."`
	Counters map[string]int64 `json:"counters,omitempty" doc:"Largest value of each named usage counter."`
}

// ClassBudgetExceeded: the run's usage went over its budget (a run's
// error only).
const ClassBudgetExceeded = "budget_exceeded"

// MaxBudgetCounters bounds the counters one budget limits.
const MaxBudgetCounters = 32

var counterRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`)

// Check validates a budget; field names it in errors. A nil budget is
// valid (no limit).
func (b *Budget) Check(field string) error {
	if b == nil {
		return nil
	}
	var errs ValidationError
	if b.CostUSD < 0 {
		errs = append(errs, &FieldError{Field: field + ".cost_usd", Message: "must not be negative"})
	}
	if b.Tokens < 0 {
		errs = append(errs, &FieldError{Field: field + ".tokens", Message: "must not be negative"})
	}
	if len(b.Counters) > MaxBudgetCounters {
		errs = append(errs, &FieldError{Field: field + ".counters", Message: fmt.Sprintf("at most %d counters", MaxBudgetCounters)})
	}
	for _, name := range b.counterNames() {
		if !counterRE.MatchString(name) || b.Counters[name] < 0 {
			errs = append(errs, &FieldError{Field: field + ".counters." + name, Message: "a counter name must match " + counterRE.String() + " and its limit must not be negative"})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (b *Budget) counterNames() []string {
	return slices.Sorted(maps.Keys(b.Counters))
}

// String is the budget for people: "200000 tokens, $2.0000, searches=50".
func (b *Budget) String() string {
	var parts []string
	if b.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.Tokens))
	}
	if b.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", b.CostUSD))
	}
	for _, k := range b.counterNames() {
		parts = append(parts, fmt.Sprintf("%s=%d", k, b.Counters[k]))
	}
	return strings.Join(parts, ", ")
}

// Exceeded says which limit u goes over, or "" when u is within the
// budget (or there is none). A zero limit is no limit.
func (b *Budget) Exceeded(u Usage) string {
	switch {
	case b == nil:
		return ""
	case b.CostUSD > 0 && u.CostUSD > b.CostUSD:
		return fmt.Sprintf("cost $%.4f is over the run's budget of $%.4f", u.CostUSD, b.CostUSD)
	case b.Tokens > 0 && u.InputTokens+u.OutputTokens > b.Tokens:
		return fmt.Sprintf("%d tokens are over the run's budget of %d", u.InputTokens+u.OutputTokens, b.Tokens)
	}
	for _, name := range b.counterNames() {
		if limit := b.Counters[name]; limit > 0 && u.Counters[name] > limit {
			return fmt.Sprintf("counter %s at %d is over the run's budget of %d", name, u.Counters[name], limit)
		}
	}
	return ""
}
