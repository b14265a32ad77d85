package engine

import "github.com/cairn-dev/cairn"

// Price is what a model's tokens cost, in US dollars per million.
type Price struct {
	InputPerMillion  float64 `json:"input_per_million"`
	OutputPerMillion float64 `json:"output_per_million"`
}

// PriceBook prices usage by model name.
type PriceBook map[string]Price

// price sets u.CostUSD from the book; unknown models cost nothing (and
// whatever cost the worker claimed is ignored).
func (b PriceBook) price(u cairn.Usage) cairn.Usage {
	u.CostUSD = 0
	if p, ok := b[u.Model]; ok {
		u.CostUSD = float64(u.InputTokens)*p.InputPerMillion/1e6 + float64(u.OutputTokens)*p.OutputPerMillion/1e6
	}
	return u
}
