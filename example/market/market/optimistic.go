package market

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Optimistic is the Market of WATCH/MULTI/EXEC transactions: each
// operation watches the keys its decision depends on, reads them, and
// queues its updates in a MULTI that EXEC runs only if no watched key was
// written meanwhile; when one was, it starts over, up to WithMaxRetries
// times. Nobody waits for anybody: under contention the work of the losers
// is thrown away and done again.
type Optimistic struct {
	client     redis.UniversalClient
	keys       Keys
	grain      Granularity
	maxRetries int
	list, buy  opCounters

	// beforeExec, when set (by tests), runs between the reads and EXEC of
	// every attempt, where a conflicting write makes EXEC fail.
	beforeExec func()
}

// NewOptimistic returns the optimistic market under keys (DefaultKeys when
// empty) in client. It honours WithGranularity and WithMaxRetries.
func NewOptimistic(client redis.UniversalClient, keys Keys, opts ...Option) *Optimistic {
	o := applyOptions(opts)
	keys = keys.orDefault()
	return &Optimistic{client: client, keys: keys, grain: o.grain, maxRetries: o.maxRetries}
}

// List moves item from seller's inventory to the listings at price. It
// watches the seller's inventory: a concurrent listing by the same seller,
// or a purchase into its inventory, makes it retry. See Market.List for
// the errors.
func (m *Optimistic) List(ctx context.Context, seller, item string, price int64) error {
	if price <= 0 {
		return ErrInvalidPrice
	}
	inventory := m.keys.Inventory(seller)
	return m.transact(ctx, &m.list, func(tx *redis.Tx) error {
		owned, err := tx.SIsMember(ctx, inventory, item).Result()
		if err != nil {
			return err
		}
		if !owned {
			return ErrNotOwned
		}
		return m.exec(ctx, tx, func(p redis.Pipeliner) {
			queueListing(ctx, p, m.keys, seller, item, price)
			if m.grain == PerItem {
				p.Incr(ctx, m.keys.Item(item))
			}
		})
	}, inventory)
}

// Buy buys item from seller for buyer at the listed price. It watches the
// buyer's hash (its funds) and, at PerItem, the item's version key, or at
// WholeMarket, the whole listings set. See Market.Buy for the errors.
func (m *Optimistic) Buy(ctx context.Context, buyer, item, seller string) (int64, error) {
	if buyer == seller {
		return 0, ErrOwnItem
	}
	buyerKey, member := m.keys.User(buyer), Listing(item, seller)
	watched := []string{buyerKey, m.keys.Item(item)}
	if m.grain == WholeMarket {
		watched[1] = m.keys.Listings()
	}
	var price int64
	err := m.transact(ctx, &m.buy, func(tx *redis.Tx) error {
		var err error
		if price, err = listedPrice(ctx, tx, m.keys, member); err != nil {
			return err
		}
		if err := checkFunds(ctx, tx, buyerKey, price); err != nil {
			return err
		}
		return m.exec(ctx, tx, func(p redis.Pipeliner) {
			queueSale(ctx, p, m.keys, buyer, item, seller, price)
			if m.grain == PerItem {
				p.Incr(ctx, m.keys.Item(item))
			}
		})
	}, watched...)
	if err != nil {
		return 0, err
	}
	return price, nil
}

// Stats returns the retries so far; Waits and WaitTime stay 0.
func (m *Optimistic) Stats() Stats {
	return Stats{List: m.list.snapshot(), Buy: m.buy.snapshot()}
}

// transact runs fn in a WATCH of keys until its EXEC is not aborted, at
// most 1+maxRetries times.
func (m *Optimistic) transact(ctx context.Context, c *opCounters, fn func(*redis.Tx) error, keys ...string) error {
	for attempt := 0; ; attempt++ {
		err := m.client.Watch(ctx, fn, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		if attempt == m.maxRetries {
			return fmt.Errorf("%w: %d attempts aborted by conflicting writes", ErrTooManyRetries, attempt+1)
		}
		c.retries.Add(1)
	}
}

// exec runs the queued updates in MULTI/EXEC on the watching connection.
func (m *Optimistic) exec(ctx context.Context, tx *redis.Tx, queue func(redis.Pipeliner)) error {
	if m.beforeExec != nil {
		m.beforeExec()
	}
	_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		return nil
	})
	return err
}
