package redislock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock"
)

// The go-zero way: only the import path changes.
func ExampleNewRedisLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	// miniredis, like redis-server before 7.2, rejects the CLIENT SETINFO
	// go-zero sends on new connections, which go-zero's breaker counts;
	// zredis.WithIdentity() turns it off (RedisConf's DisableIdentity:
	// true). Without it the lock works all the same and logs the hazard
	// once, and the middleware and the interceptor refuse the store at
	// start-up with redislock.ErrIdentityRejected.
	store := zredis.New(mr.Addr(), zredis.WithIdentity())

	lock := redislock.NewRedisLock(store, "stock:sku-1")
	lock.SetExpire(5)
	ok, err := lock.Acquire()
	fmt.Println("first:", ok, err)

	other := redislock.NewRedisLock(store, "stock:sku-1")
	ok, err = other.Acquire()
	fmt.Println("second:", ok, err)

	ok, err = lock.Release()
	fmt.Println("release:", ok, err)
	// Output:
	// first: true <nil>
	// second: false <nil>
	// release: true <nil>
}

// On a go-redis client, with a millisecond expiry.
func ExampleNew() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()

	ctx := context.Background()
	lock := redislock.New(client, "report:2026-11",
		redislock.WithExpiry(1500*time.Millisecond), redislock.WithTolerance(0))
	if ok, err := lock.AcquireCtx(ctx); err != nil || !ok {
		fmt.Println("busy or failed:", ok, err)
		return
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx))

	ttl, _ := lock.TTL(ctx)
	fmt.Println("held for", ttl)
	// Output:
	// held for 1.5s
}
