package market

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock"
)

// Pessimistic is the Market of zerolock locks: each operation takes the
// locks of what it decides on, all at once with one redislock.MultiLock,
// waiting for them (AcquireWaitCtx: woken by the holder's release, not
// polling), then reads and writes with no watch, the writes in one
// MULTI/EXEC, and releases. Nothing is done twice: under contention
// operations queue instead.
//
// At PerItem, List locks the item it moves and Buy locks the item and the
// buyer (whose funds it checks; the seller's are only added to, which
// needs no lock). The MultiLock takes both or neither and holds none while
// it waits, so two operations never wait for each other in a cycle,
// whatever order they name their locks in. At WholeMarket every operation
// takes the one market lock.
type Pessimistic struct {
	client    redis.UniversalClient
	keys      Keys
	grain     Granularity
	wait      time.Duration
	expiry    time.Duration
	list, buy opCounters
	locksLost atomic.Int64
}

// NewPessimistic returns the pessimistic market under keys (DefaultKeys
// when empty) in client, its locks in the same server. It honours
// WithGranularity, WithLockWait and WithLockExpiry.
func NewPessimistic(client redis.UniversalClient, keys Keys, opts ...Option) *Pessimistic {
	o := applyOptions(opts)
	keys = keys.orDefault()
	return &Pessimistic{client: client, keys: keys, grain: o.grain, wait: o.lockWait, expiry: o.lockExpiry}
}

// List moves item from seller's inventory to the listings at price, under
// the item's lock (or the market's). See Market.List for the errors.
func (m *Pessimistic) List(ctx context.Context, seller, item string, price int64) error {
	if price <= 0 {
		return ErrInvalidPrice
	}
	return m.locked(ctx, &m.list, m.lockNames(item, ""), func() error {
		owned, err := m.client.SIsMember(ctx, m.keys.Inventory(seller), item).Result()
		if err != nil {
			return err
		}
		if !owned {
			return ErrNotOwned
		}
		_, err = m.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			queueListing(ctx, p, m.keys, seller, item, price)
			return nil
		})
		return err
	})
}

// Buy buys item from seller for buyer at the listed price, under the
// item's and the buyer's locks (or the market's). See Market.Buy for the
// errors.
func (m *Pessimistic) Buy(ctx context.Context, buyer, item, seller string) (int64, error) {
	if buyer == seller {
		return 0, ErrOwnItem
	}
	var price int64
	err := m.locked(ctx, &m.buy, m.lockNames(item, buyer), func() error {
		var err error
		if price, err = listedPrice(ctx, m.client, m.keys, Listing(item, seller)); err != nil {
			return err
		}
		if err := checkFunds(ctx, m.client, m.keys.User(buyer), price); err != nil {
			return err
		}
		_, err = m.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			queueSale(ctx, p, m.keys, buyer, item, seller, price)
			return nil
		})
		return err
	})
	if err != nil {
		return 0, err
	}
	return price, nil
}

// Stats returns the waits so far and the locks found expired at release;
// Retries stay 0.
func (m *Pessimistic) Stats() Stats {
	return Stats{List: m.list.snapshot(), Buy: m.buy.snapshot(), LocksLost: m.locksLost.Load()}
}

// lockNames lists the locks of an operation on item (and buyer's funds,
// when buyer is not empty).
func (m *Pessimistic) lockNames(item, buyer string) []string {
	if m.grain == WholeMarket {
		return []string{m.keys.Lock("market")}
	}
	names := []string{m.keys.Lock("item:" + item)}
	if buyer != "" {
		names = append(names, m.keys.Lock("user:"+buyer))
	}
	return names
}

// locked runs fn holding all the locks named, and releases them whatever
// fn returns.
func (m *Pessimistic) locked(ctx context.Context, c *opCounters, names []string, fn func() error) error {
	lock, err := redislock.NewMultiLock(m.client, names,
		redislock.WithExpiry(m.expiry), redislock.WithTolerance(0))
	if err != nil {
		return err
	}
	if err := m.acquire(ctx, c, lock); err != nil {
		return err
	}
	defer func() {
		// Released even when ctx has ended, so that nobody waits for the
		// expiry of a lock whose work is over.
		if ok, err := lock.ReleaseCtx(context.WithoutCancel(ctx)); err == nil && !ok {
			m.locksLost.Add(1)
		}
	}()
	return fn()
}

// acquire takes lock, waiting up to m.wait. A first try that finds the
// keys free is not a wait; one that finds one held counts as one and times
// the wait (the waiting acquire tries once more first: one extra round
// trip, on contended locks only, for the count).
func (m *Pessimistic) acquire(ctx context.Context, c *opCounters, lock *redislock.MultiLock) error {
	ok, err := lock.AcquireCtx(ctx)
	if err != nil || ok {
		return err
	}
	c.waits.Add(1)
	start := time.Now()
	ok, err = lock.AcquireWaitCtx(ctx, m.wait)
	c.waitNanos.Add(int64(time.Since(start)))
	switch {
	case err != nil:
		return err
	case !ok:
		return ErrLockTimeout
	}
	return nil
}
