package market

import "errors"

var (
	// ErrNotOwned is returned by List when the item is not in the seller's
	// inventory: never owned, already listed, or sold.
	ErrNotOwned = errors.New("market: item not in the seller's inventory")
	// ErrNotListed is returned by Buy when the listing "<item>.<seller>" is
	// not on the market: never listed, or already bought.
	ErrNotListed = errors.New("market: item not listed by that seller")
	// ErrOwnItem is returned by Buy when the buyer is the seller.
	ErrOwnItem = errors.New("market: buyer is the seller")
	// ErrInsufficientFunds is returned by Buy when the buyer's funds are
	// below the listed price.
	ErrInsufficientFunds = errors.New("market: insufficient funds")
	// ErrInvalidPrice is returned by List for a price that is not positive.
	ErrInvalidPrice = errors.New("market: price must be positive")
	// ErrTooManyRetries is returned by Optimistic's operations when every
	// attempt allowed by WithMaxRetries was aborted by a conflicting write
	// to a watched key. Nothing was changed.
	ErrTooManyRetries = errors.New("market: too many retries")
	// ErrLockTimeout is returned by Pessimistic's operations when a lock
	// they need was not free within WithLockWait. Nothing was changed.
	ErrLockTimeout = errors.New("market: lock wait timed out")
)
