package market

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Workload is a market's users and items and the traders that run on
// them for a while. Buyers goroutines each buy, for one user, random
// listed items of other users; Sellers goroutines each list, for their
// share of the users, random items those users own, at random prices.
// What a user buys lands in its inventory and is listed again by its
// seller goroutine, so the market never runs dry, and the contention is
// set by how many items there are for how many buyers.
type Workload struct {
	// Keys is the market's key prefix; the default is DefaultKeys.
	Keys Keys
	// Buyers and Sellers are the numbers of goroutines of each kind; the
	// users are as many as the larger of the two. Items is the number of
	// items. Each must be at least 1.
	Buyers, Sellers, Items int
	// Duration is how long the traders start new operations; operations
	// under way then are finished. It must be positive.
	Duration time.Duration
	// StartFunds is every user's funds at the start, in cents; the default
	// is 1,000,000 (enough for a hundred purchases at the highest price).
	StartFunds int64
	// MinPrice and MaxPrice bound the listing prices, in cents; the
	// defaults are 100 and 10,000.
	MinPrice, MaxPrice int64
	// Idle is how long a trader pauses when it found nothing to buy or to
	// list; the default is 200µs.
	Idle time.Duration
}

// Result is what a run did.
type Result struct {
	// Elapsed is the time from the start to the end of the last operation.
	Elapsed time.Duration
	// Trades and Lists count the purchases and listings that succeeded.
	Trades, Lists int64
	// BuyLatency and ListLatency are the durations of the successful ones.
	BuyLatency, ListLatency Latencies
	// Failures counts the failed operations by kind and reason, as
	// "buy: not listed" (see Reason).
	Failures map[string]int64
	// Stats is the market's Stats at the end.
	Stats Stats
	// Ledger records what succeeded, for CheckInvariants.
	Ledger *Ledger
}

// TradesPerSecond is Trades over Elapsed.
func (r *Result) TradesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Trades) / r.Elapsed.Seconds()
}

func (w Workload) withDefaults() Workload {
	w.Keys = w.Keys.orDefault()
	if w.StartFunds == 0 {
		w.StartFunds = 1_000_000
	}
	if w.MinPrice == 0 {
		w.MinPrice = 100
	}
	if w.MaxPrice == 0 {
		w.MaxPrice = 10_000
	}
	if w.Idle == 0 {
		w.Idle = 200 * time.Microsecond
	}
	return w
}

func (w Workload) validate() error {
	switch {
	case w.Buyers < 1 || w.Sellers < 1 || w.Items < 1:
		return errors.New("market: a workload needs at least one buyer, one seller and one item")
	case w.Duration <= 0:
		return errors.New("market: a workload needs a positive duration")
	case w.MinPrice < 1 || w.MaxPrice < w.MinPrice:
		return fmt.Errorf("market: prices %d..%d: want 1 <= min <= max", w.MinPrice, w.MaxPrice)
	}
	return nil
}

// Run runs the traders on m for w.Duration, on a market Seed prepared,
// and returns what they did. It reads the listings and inventories through
// client. It returns an error only for an invalid workload; failed
// operations are counted in the Result. When ctx ends, the traders stop.
func (w Workload) Run(ctx context.Context, client redis.UniversalClient, m Market) (*Result, error) {
	w = w.withDefaults()
	if err := w.validate(); err != nil {
		return nil, err
	}
	r := &run{w: w, client: client, m: m, ledger: NewLedger(), failures: map[string]int64{}}
	start := time.Now()
	r.deadline = start.Add(w.Duration)
	users := w.Users()
	buyLat := make([][]time.Duration, w.Buyers)
	listLat := make([][]time.Duration, w.Sellers)
	var wg sync.WaitGroup
	for b := range w.Buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buyLat[b] = r.buyer(ctx, users[b])
		}()
	}
	for s := range w.Sellers {
		var mine []string
		for i := s; i < len(users); i += w.Sellers {
			mine = append(mine, users[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			listLat[s] = r.seller(ctx, mine)
		}()
	}
	wg.Wait()
	return &Result{
		Elapsed:     time.Since(start),
		Trades:      r.trades.Load(),
		Lists:       r.lists.Load(),
		BuyLatency:  mergeLatencies(buyLat),
		ListLatency: mergeLatencies(listLat),
		Failures:    r.failures,
		Stats:       m.Stats(),
		Ledger:      r.ledger,
	}, nil
}

// run is the shared state of one Run's traders.
type run struct {
	w             Workload
	client        redis.UniversalClient
	m             Market
	deadline      time.Time
	ledger        *Ledger
	trades, lists atomic.Int64

	mu       sync.Mutex
	failures map[string]int64
}

func (r *run) over(ctx context.Context) bool {
	return ctx.Err() != nil || time.Now().After(r.deadline)
}

// buyer buys random listings of other users for user until the run is
// over, and returns the latencies of its purchases.
func (r *run) buyer(ctx context.Context, user string) []time.Duration {
	var lat []time.Duration
	for !r.over(ctx) {
		members, err := r.client.ZRandMember(ctx, r.w.Keys.Listings(), 4).Result()
		if err != nil {
			r.fail("read", err)
			r.idle()
			continue
		}
		item, seller := pickOthers(members, user)
		if item == "" {
			r.idle()
			continue
		}
		start := time.Now()
		price, err := r.m.Buy(ctx, user, item, seller)
		if err != nil {
			r.fail("buy", err)
			continue
		}
		lat = append(lat, time.Since(start))
		r.trades.Add(1)
		r.ledger.sold(user, item, seller, price)
	}
	return lat
}

// pickOthers returns the first listing of members not sold by user.
func pickOthers(members []string, user string) (item, seller string) {
	for _, member := range members {
		if item, seller, ok := ParseListing(member); ok && seller != user {
			return item, seller
		}
	}
	return "", ""
}

// seller lists, at random prices, random items its users own, taking the
// users in turn, until the run is over; it returns the latencies of its
// listings.
func (r *run) seller(ctx context.Context, users []string) []time.Duration {
	var lat []time.Duration
	next := 0
	for !r.over(ctx) {
		user, item := "", ""
		for range users {
			u := users[next]
			next = (next + 1) % len(users)
			got, err := r.client.SRandMember(ctx, r.w.Keys.Inventory(u)).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				r.fail("read", err)
				break
			}
			if got != "" {
				user, item = u, got
				break
			}
		}
		if item == "" {
			r.idle()
			continue
		}
		price := r.w.MinPrice + rand.Int64N(r.w.MaxPrice-r.w.MinPrice+1)
		start := time.Now()
		if err := r.m.List(ctx, user, item, price); err != nil {
			r.fail("list", err)
			continue
		}
		lat = append(lat, time.Since(start))
		r.lists.Add(1)
		r.ledger.listed(item)
	}
	return lat
}

func (r *run) idle() {
	time.Sleep(r.w.Idle)
}

// fail counts a failed operation; one whose outcome is unknown makes the
// ledger inexact.
func (r *run) fail(op string, err error) {
	reason, known := Reason(err)
	if !known && op != "read" {
		r.ledger.unknown()
	}
	r.mu.Lock()
	r.failures[op+": "+reason]++
	r.mu.Unlock()
}

// Reason names why an operation failed, for reports; known is true when
// the error guarantees that nothing was changed (the package's errors).
func Reason(err error) (reason string, known bool) {
	for _, e := range []struct {
		err  error
		name string
	}{
		{ErrNotListed, "not listed"},
		{ErrNotOwned, "not owned"},
		{ErrOwnItem, "own item"},
		{ErrInsufficientFunds, "insufficient funds"},
		{ErrInvalidPrice, "invalid price"},
		{ErrTooManyRetries, "too many retries"},
		{ErrLockTimeout, "lock timeout"},
	} {
		if errors.Is(err, e.err) {
			return e.name, true
		}
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "context ended", false
	}
	return "redis error", false
}
