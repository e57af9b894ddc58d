package market

import (
	"context"
	"fmt"
)

// A Market lists and sells items. Optimistic and Pessimistic are Markets;
// both are safe for concurrent use.
type Market interface {
	// List moves item from seller's inventory to the market at price
	// (cents). It returns ErrInvalidPrice, ErrNotOwned, the implementation's
	// contention error (ErrTooManyRetries, ErrLockTimeout), or a Redis
	// error; on any error nothing was changed, unless a Redis error hides
	// whether the transaction ran.
	List(ctx context.Context, seller, item string, price int64) error
	// Buy moves the listed price from buyer to seller, item to buyer's
	// inventory, and removes the listing, all at once; it returns the price
	// paid. It returns ErrOwnItem, ErrNotListed, ErrInsufficientFunds, the
	// implementation's contention error, or a Redis error, with the same
	// guarantee as List.
	Buy(ctx context.Context, buyer, item, seller string) (int64, error)
	// Stats returns what contention has cost so far.
	Stats() Stats
}

// Granularity says how much of the market one operation excludes others
// from.
type Granularity int

const (
	// PerItem conflicts only operations on the same item (and, for Buy,
	// the same buyer's funds): Optimistic watches the item's version key,
	// Pessimistic locks the item and the buyer. The default.
	PerItem Granularity = iota
	// WholeMarket conflicts every Buy with every other operation that
	// changes the listings: Optimistic watches the listings set itself
	// (as the textbook version does), Pessimistic takes one lock for the
	// whole market.
	WholeMarket
)

// String returns "item" or "market", the command's -grain values.
func (g Granularity) String() string {
	switch g {
	case PerItem:
		return "item"
	case WholeMarket:
		return "market"
	}
	return fmt.Sprintf("Granularity(%d)", int(g))
}

// ParseGranularity reads "item" or "market".
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "item":
		return PerItem, nil
	case "market":
		return WholeMarket, nil
	}
	return 0, fmt.Errorf("market: granularity %q: want item or market", s)
}

var (
	_ Market = (*Optimistic)(nil)
	_ Market = (*Pessimistic)(nil)
)
