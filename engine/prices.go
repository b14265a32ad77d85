package engine

import "github.com/cairn-dev/cairn"

// Price and PriceBook price the usage workers report (cairn.PriceBook):
// Config.Prices, from CAIRN_PRICES.
type (
	Price     = cairn.Price
	PriceBook = cairn.PriceBook
)
