package engine

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

var testPrices = cairn.PriceBook{
	"big":   {InputPerMillion: 3, OutputPerMillion: 15},
	"small": {InputPerMillion: 0.25, OutputPerMillion: 1.25},
}

func cost(p cairn.Price, in, out int64) float64 {
	return float64(in)*p.InputPerMillion/1e6 + float64(out)*p.OutputPerMillion/1e6
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// A step whose attempt used two models is priced model by model, and the
// per-model usage carries through to the step's and the run's totals
// (before, Add made the model "mixed" and the price book found no price:
// $0).
func TestUsageTwoModelsPriced(t *testing.T) {
	h := newHarness(t, withConfig(Config{Prices: testPrices}), wallClock())
	ctx, e := h.ctx, h.e
	wf := cairn.Workflow{Name: "two", Version: "1", Steps: []cairn.Step{
		{ID: "agent", Retry: &cairn.RetryPolicy{InitialBackoff: cairn.Duration(time.Millisecond)}},
		{ID: "summary", After: []string{"agent"}},
	}}
	register(t, e, "w", wf)
	run := mustStart(t, e, "two", `{}`)

	// Attempt 1 of agent fails after using big; its usage still counts.
	l := claimOne(t, e, "w")
	if _, err := e.Fail(ctx, l.ID, cairn.FailRequest{Error: cairn.ErrorInfo{Class: cairn.ClassRetryable, Message: "x"},
		Usage: &cairn.Usage{Model: "big", InputTokens: 100, OutputTokens: 10}}); err != nil {
		t.Fatal(err)
	}
	// Attempt 2 uses both models, and claims a cost the engine ignores.
	l = claimOne(t, e, "w")
	two := &cairn.Usage{Model: cairn.MixedModels, InputTokens: 3000, OutputTokens: 300, CostUSD: 99,
		Models: map[string]cairn.ModelUsage{
			"big":   {InputTokens: 1000, OutputTokens: 100, CostUSD: 42},
			"small": {InputTokens: 2000, OutputTokens: 200},
		},
		Counters: map[string]int64{"calls": 2}}
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Usage: two}); err != nil {
		t.Fatal(err)
	}
	if two.Models["big"].CostUSD != 42 || two.CostUSD != 99 {
		t.Fatal("pricing changed the caller's usage")
	}
	// summary uses small only: the single-model form.
	l = claimOne(t, e, "w")
	if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`2`),
		Usage: &cairn.Usage{Model: "small", InputTokens: 400, OutputTokens: 40}}); err != nil {
		t.Fatal(err)
	}

	r := getRun(t, e, run)
	if r.Status != cairn.RunCompleted {
		t.Fatalf("run %s", r.Status)
	}
	big, small := testPrices["big"], testPrices["small"]
	agent := stepOf(r, "agent")
	if len(agent.Attempts) != 2 {
		t.Fatalf("agent attempts %+v", agent.Attempts)
	}
	// Attempt 2: each model priced, the total their sum.
	a := agent.Attempts[1].Usage
	if a == nil || a.Model != cairn.MixedModels || a.InputTokens != 3000 || a.OutputTokens != 300 ||
		!near(a.Models["big"].CostUSD, cost(big, 1000, 100)) || !near(a.Models["small"].CostUSD, cost(small, 2000, 200)) ||
		!near(a.CostUSD, cost(big, 1000, 100)+cost(small, 2000, 200)) {
		t.Fatalf("attempt 2 usage %+v", a)
	}
	// Attempt 1: one model, as usage always looked.
	if a := agent.Attempts[0].Usage; a == nil || a.Model != "big" || a.Models != nil || !near(a.CostUSD, cost(big, 100, 10)) {
		t.Fatalf("attempt 1 usage %+v", a)
	}
	// The step sums its attempts per model.
	su := agent.Usage
	if su.Model != cairn.MixedModels || su.InputTokens != 3100 || su.Models["big"].InputTokens != 1100 || su.Models["big"].OutputTokens != 110 ||
		!near(su.Models["big"].CostUSD, cost(big, 1100, 110)) || su.Models["small"].InputTokens != 2000 ||
		!near(su.CostUSD, cost(big, 1100, 110)+cost(small, 2000, 200)) || su.Counters["calls"] != 2 {
		t.Fatalf("agent usage %+v", su)
	}
	if su := stepOf(r, "summary").Usage; su.Model != "small" || su.Models != nil || !near(su.CostUSD, cost(small, 400, 40)) {
		t.Fatalf("summary usage %+v", su)
	}
	// The run sums its steps per model.
	ru := r.Usage
	want := cost(big, 1100, 110) + cost(small, 2400, 240)
	if ru.Model != cairn.MixedModels || ru.InputTokens != 3500 || ru.OutputTokens != 350 || len(ru.Models) != 2 ||
		ru.Models["small"].InputTokens != 2400 || !near(ru.Models["small"].CostUSD, cost(small, 2400, 240)) ||
		!near(ru.Models["big"].CostUSD, cost(big, 1100, 110)) || !near(ru.CostUSD, want) {
		t.Fatalf("run usage %+v, want cost %g", ru, want)
	}
	if want < 0.005 {
		t.Fatalf("test prices too small to tell: %g", want)
	}
}

// What the engine makes of the usage a worker sends.
func TestUsagePriceForms(t *testing.T) {
	big, small := testPrices["big"], testPrices["small"]
	for _, tc := range []struct {
		name string
		in   cairn.Usage
		want cairn.Usage
	}{{
		name: "one model, as before",
		in:   cairn.Usage{Model: "big", InputTokens: 10, OutputTokens: 1, CostUSD: 5},
		want: cairn.Usage{Model: "big", InputTokens: 10, OutputTokens: 1, CostUSD: cost(big, 10, 1)},
	}, {
		name: "unknown model costs nothing",
		in:   cairn.Usage{Model: "nope", InputTokens: 10, OutputTokens: 1},
		want: cairn.Usage{Model: "nope", InputTokens: 10, OutputTokens: 1},
	}, {
		name: "models without totals get totals",
		in: cairn.Usage{Models: map[string]cairn.ModelUsage{
			"big": {InputTokens: 10}, "small": {InputTokens: 20, OutputTokens: 2}}},
		want: cairn.Usage{Model: cairn.MixedModels, InputTokens: 30, OutputTokens: 2, CostUSD: cost(big, 10, 0) + cost(small, 20, 2),
			Models: map[string]cairn.ModelUsage{"big": {InputTokens: 10, CostUSD: cost(big, 10, 0)}, "small": {InputTokens: 20, OutputTokens: 2, CostUSD: cost(small, 20, 2)}}},
	}, {
		name: "one model in models is the single-model form",
		in:   cairn.Usage{Model: "whatever", InputTokens: 10, Models: map[string]cairn.ModelUsage{"small": {InputTokens: 10}}},
		want: cairn.Usage{Model: "small", InputTokens: 10, CostUSD: cost(small, 10, 0)},
	}, {
		name: "tokens of no model are not priced",
		in:   cairn.Usage{Model: cairn.MixedModels, InputTokens: 1000, Models: map[string]cairn.ModelUsage{"big": {InputTokens: 10}, "small": {InputTokens: 10}}},
		want: cairn.Usage{Model: cairn.MixedModels, InputTokens: 1000, CostUSD: cost(big, 10, 0) + cost(small, 10, 0),
			Models: map[string]cairn.ModelUsage{"big": {InputTokens: 10, CostUSD: cost(big, 10, 0)}, "small": {InputTokens: 10, CostUSD: cost(small, 10, 0)}}},
	}, {
		name: "one known, one unknown model",
		in:   cairn.Usage{Models: map[string]cairn.ModelUsage{"big": {InputTokens: 10}, "nope": {InputTokens: 10}}},
		want: cairn.Usage{Model: cairn.MixedModels, InputTokens: 20, CostUSD: cost(big, 10, 0),
			Models: map[string]cairn.ModelUsage{"big": {InputTokens: 10, CostUSD: cost(big, 10, 0)}, "nope": {InputTokens: 10}}},
	}, {
		name: "counters only",
		in:   cairn.Usage{Counters: map[string]int64{"x": 1}},
		want: cairn.Usage{Counters: map[string]int64{"x": 1}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := testPrices.Price(tc.in)
			if !sameUsage(got, tc.want) {
				t.Fatalf("price(%+v)\n = %+v\nwant %+v", tc.in, got, tc.want)
			}
		})
	}
}

func sameUsage(a, b cairn.Usage) bool {
	if a.Model != b.Model || a.InputTokens != b.InputTokens || a.OutputTokens != b.OutputTokens || !near(a.CostUSD, b.CostUSD) ||
		len(a.Models) != len(b.Models) || len(a.Counters) != len(b.Counters) || (a.Models == nil) != (b.Models == nil) {
		return false
	}
	for m, x := range a.Models {
		y, ok := b.Models[m]
		if !ok || x.InputTokens != y.InputTokens || x.OutputTokens != y.OutputTokens || !near(x.CostUSD, y.CostUSD) {
			return false
		}
	}
	for k, v := range a.Counters {
		if b.Counters[k] != v {
			return false
		}
	}
	return true
}

// Usage.Add merges model by model, keeps the single-model form while one
// model is used, and shares no map with what it added.
func TestUsageAdd(t *testing.T) {
	var u cairn.Usage
	u.Add(cairn.Usage{Model: "a", InputTokens: 1, OutputTokens: 2, CostUSD: 0.5})
	u.Add(cairn.Usage{Model: "a", InputTokens: 1})
	if u.Model != "a" || u.Models != nil || u.InputTokens != 2 || u.OutputTokens != 2 {
		t.Fatalf("one model: %+v", u)
	}
	o := cairn.Usage{Model: "b", InputTokens: 10, CostUSD: 1}
	u.Add(o)
	if u.Model != cairn.MixedModels || u.InputTokens != 12 || !near(u.CostUSD, 1.5) ||
		u.Models["a"] != (cairn.ModelUsage{InputTokens: 2, OutputTokens: 2, CostUSD: 0.5}) || u.Models["b"] != (cairn.ModelUsage{InputTokens: 10, CostUSD: 1}) {
		t.Fatalf("two models: %+v", u)
	}
	// Adding u twice leaves u as it was.
	var sum cairn.Usage
	sum.Add(u)
	sum.Add(u)
	if u.Models["a"].InputTokens != 2 || sum.Models["a"].InputTokens != 4 || sum.InputTokens != 24 {
		t.Fatalf("added twice: %+v (from %+v)", sum, u)
	}
	// Tokens of no model: counted, not attributed.
	var v cairn.Usage
	v.Add(cairn.Usage{Model: "a", InputTokens: 5})
	v.Add(cairn.Usage{InputTokens: 3})
	if v.Model != "a" || v.InputTokens != 8 || len(v.Models) != 1 || v.Models["a"].InputTokens != 5 {
		t.Fatalf("no-model tokens: %+v", v)
	}
	// Usage summed before models existed stays "mixed".
	old := cairn.Usage{Model: cairn.MixedModels, InputTokens: 7}
	old.Add(cairn.Usage{Model: "a", InputTokens: 1})
	if old.Model != cairn.MixedModels || old.InputTokens != 8 || old.Models["a"].InputTokens != 1 {
		t.Fatalf("legacy mixed: %+v", old)
	}
	if !(cairn.Usage{}).IsZero() || (cairn.Usage{Models: map[string]cairn.ModelUsage{"a": {}}}).IsZero() {
		t.Fatal("IsZero")
	}
	// JSON: the single-model form has no models; the mixed form has them.
	b, _ := json.Marshal(cairn.Usage{Model: "a", InputTokens: 1})
	if string(b) != `{"model":"a","input_tokens":1}` {
		t.Fatalf("single-model JSON %s", b)
	}
	b, _ = json.Marshal(sum)
	var back cairn.Usage
	if err := json.Unmarshal(b, &back); err != nil || !sameUsage(back, sum) {
		t.Fatalf("round trip %s: %+v %v", b, back, err)
	}
}

func TestUsagePricedAndSummed(t *testing.T) {
	h := newHarness(t, withConfig(Config{Prices: cairn.PriceBook{"gpt-x": {InputPerMillion: 2, OutputPerMillion: 8}}}), wallClock(), withWorkflows("w", fanOut("fan", 2)))
	ctx, e := h.ctx, h.e
	run := mustStart(t, e, "fan", `{}`)
	for range 3 {
		l := claimOne(t, e, "w")
		u := &cairn.Usage{Model: "gpt-x", InputTokens: 1000, OutputTokens: 500, CostUSD: 99, Counters: map[string]int64{"calls": 1}}
		if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`1`), Usage: u}); err != nil {
			t.Fatal(err)
		}
	}
	r := getRun(t, e, run)
	want := 3 * (1000*2.0/1e6 + 500*8.0/1e6)
	if d := r.Usage.CostUSD - want; d > 1e-12 || d < -1e-12 || r.Usage.InputTokens != 3000 || r.Usage.Counters["calls"] != 3 {
		t.Fatalf("run usage %+v, want cost %g", r.Usage, want)
	}
	if s := stepOf(r, "join"); s.Usage.InputTokens != 1000 || s.Attempts[0].Usage == nil {
		t.Fatalf("step usage %+v", s)
	}
}
