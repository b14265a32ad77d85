package cairn

import "slices"

// Price is what a model's tokens cost, in US dollars per million.
type Price struct {
	InputPerMillion  float64 `json:"input_per_million"`
	OutputPerMillion float64 `json:"output_per_million"`
}

// PriceBook prices usage by model name.
type PriceBook map[string]Price

// Price prices a worker's usage model by model: each model in u.Models,
// or u.Model with the totals. Unknown models, and tokens of no model, cost
// nothing; whatever cost the worker claimed is ignored. The usage comes
// back in its smallest form (see Usage), its totals covering at
// least its models' tokens, sharing no map with u.
func (b PriceBook) Price(u Usage) Usage {
	var in, out int64
	for _, mu := range u.Models {
		in += mu.InputTokens
		out += mu.OutputTokens
	}
	u.InputTokens, u.OutputTokens = max(u.InputTokens, in), max(u.OutputTokens, out)
	var n Usage
	n.Add(u) // the smallest form, with maps of its own
	n.CostUSD = 0
	if len(n.Models) == 0 {
		n.CostUSD = b.cost(n.Model, n.InputTokens, n.OutputTokens)
		return n
	}
	// In name order, so the sum does not depend on map order.
	names := make([]string, 0, len(n.Models))
	for m := range n.Models {
		names = append(names, m)
	}
	slices.Sort(names)
	for _, m := range names {
		mu := n.Models[m]
		mu.CostUSD = b.cost(m, mu.InputTokens, mu.OutputTokens)
		n.Models[m] = mu
		n.CostUSD += mu.CostUSD
	}
	return n
}

// cost prices tokens of one model; unknown models cost nothing.
func (b PriceBook) cost(model string, in, out int64) float64 {
	p, ok := b[model]
	if !ok || model == "" || model == MixedModels {
		return 0
	}
	return float64(in)*p.InputPerMillion/1e6 + float64(out)*p.OutputPerMillion/1e6
}
