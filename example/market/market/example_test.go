package market_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/example/market/market"
)

// startRedis stands in for a real Redis, so that the examples run anywhere.
func startRedis() (*redis.Client, func()) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	return client, func() { client.Close(); mr.Close() }
}

// A sale with WATCH/MULTI/EXEC: the buyer pays the listed price, and the
// listing is gone for the next buyer.
func ExampleNewOptimistic() {
	ctx := context.Background()
	client, stop := startRedis()
	defer stop()
	keys := market.DefaultKeys
	client.HSet(ctx, keys.User("ann"), market.FundsField, 0)
	client.HSet(ctx, keys.User("bob"), market.FundsField, 2000)
	client.SAdd(ctx, keys.Inventory("ann"), "lamp")

	m := market.NewOptimistic(client, keys, market.WithMaxRetries(10))
	if err := m.List(ctx, "ann", "lamp", 1500); err != nil {
		fmt.Println(err)
		return
	}
	price, err := m.Buy(ctx, "bob", "lamp", "ann")
	fmt.Println(price, err)
	_, err = m.Buy(ctx, "eve", "lamp", "ann")
	fmt.Println(errors.Is(err, market.ErrNotListed))
	fmt.Println(client.HGet(ctx, keys.User("ann"), market.FundsField).Val(),
		client.SMembers(ctx, keys.Inventory("bob")).Val())
	// Output:
	// 1500 <nil>
	// true
	// 1500 [lamp]
}

// The same sale under zerolock's lock on the item: a Buy that finds the
// item locked waits up to WithLockWait, then gives up with ErrLockTimeout.
func ExampleNewPessimistic() {
	ctx := context.Background()
	client, stop := startRedis()
	defer stop()
	keys := market.Keys("shop")
	client.HSet(ctx, keys.User("bob"), market.FundsField, 1000)
	client.SAdd(ctx, keys.Inventory("ann"), "lamp")

	m := market.NewPessimistic(client, keys, market.WithLockWait(2*time.Second))
	if err := m.List(ctx, "ann", "lamp", 1500); err != nil {
		fmt.Println(err)
		return
	}
	_, err := m.Buy(ctx, "bob", "lamp", "ann")
	fmt.Println(err)
	// Output:
	// market: insufficient funds
}

// A short run of the workload, judged by the invariants.
func ExampleWorkload_Run() {
	ctx := context.Background()
	client, stop := startRedis()
	defer stop()
	w := market.Workload{Buyers: 4, Sellers: 2, Items: 10, Duration: 100 * time.Millisecond}
	if err := w.Seed(ctx, client); err != nil {
		fmt.Println(err)
		return
	}
	res, err := w.Run(ctx, client, market.NewOptimistic(client, w.Keys))
	if err != nil {
		fmt.Println(err)
		return
	}
	checks, err := w.CheckInvariants(ctx, client, res.Ledger)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("traded:", res.Trades > 0)
	for _, c := range checks {
		fmt.Println(c.Name, c.OK)
	}
	// Output:
	// traded: true
	// funds conserved true
	// no overdraft true
	// every item exactly once true
	// no listing sold twice true
	// funds match the trades true
}
