package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock"
)

// An order that deducts the stock of two SKUs locks both at once, on
// go-zero's store: all the keys or none.
func ExampleNewMultiLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	store := zredis.New(mr.Addr(), zredis.WithIdentity()) // see ExampleNewRedisLock

	ctx := context.Background()
	order, err := redislock.NewMultiLock(redislock.GoZeroStore(store),
		[]string{"stock:sku-2", "stock:sku-1"}, redislock.WithExpiry(5*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	ok, err := order.AcquireCtx(ctx)
	fmt.Println("order:", ok, err)

	// Each key is held as a RedisLock holds it: a lock on one SKU, or
	// another order sharing one, waits for this order.
	single := redislock.NewRedisLock(store, "stock:sku-1")
	ok, err = single.AcquireCtx(ctx)
	fmt.Println("sku-1 alone:", ok, err)
	other, _ := redislock.NewMultiLock(redislock.GoZeroStore(store), []string{"stock:sku-1", "stock:sku-3"})
	ok, err = other.AcquireCtx(ctx)
	fmt.Println("another order:", ok, err, "sku-3 taken:", mr.Exists("stock:sku-3"))

	ok, err = order.ReleaseCtx(context.WithoutCancel(ctx))
	fmt.Println("release:", ok, err)
	// Output:
	// order: true <nil>
	// sku-1 alone: false <nil>
	// another order: false <nil> sku-3 taken: false
	// release: true <nil>
}

// The waiting acquire on a go-redis client: woken when the holder
// releases, holding none of the keys while it waits.
func ExampleMultiLock_AcquireWaitCtx() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	ctx := context.Background()

	keys := []string{"stock:sku-1", "stock:sku-2"}
	first, _ := redislock.NewMultiLock(client, keys, redislock.WithExpiry(5*time.Second))
	second, _ := redislock.NewMultiLock(client, keys, redislock.WithExpiry(5*time.Second))
	if ok, err := first.AcquireCtx(ctx); !ok || err != nil {
		fmt.Println("busy or failed:", ok, err)
		return
	}
	go func() {
		time.Sleep(50 * time.Millisecond) // the first order's work
		_, _ = first.ReleaseCtx(ctx)
	}()
	ok, err := second.AcquireWaitCtx(ctx, 5*time.Second)
	fmt.Println("second order:", ok, err)
	_, _ = second.ReleaseCtx(ctx)
	// Output:
	// second order: true <nil>
}

// A bad key list is an error from the constructor.
func ExampleNewMultiLock_badKeys() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}) // not dialled
	defer client.Close()

	_, err := redislock.NewMultiLock(client, nil)
	fmt.Println(errors.Is(err, redislock.ErrInvalidKeys), err)
	_, err = redislock.NewMultiLock(client, []string{"stock:sku-1", "stock:sku-1"})
	fmt.Println(errors.Is(err, redislock.ErrInvalidKeys), err)
	// Output:
	// true redislock: invalid multi-lock keys: no keys
	// true redislock: invalid multi-lock keys: duplicate key "stock:sku-1"
}
