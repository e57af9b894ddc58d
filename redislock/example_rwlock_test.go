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

// Readers of a cached catalog share the lock; the job that rebuilds it
// takes the write side, once no reader is left, and readers see which
// rebuild their data comes from: WithFencing numbers the rebuilds (leave
// it out where nobody checks the numbers, and no counter key is kept).
func ExampleNewRWLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	// zredis.WithIdentity(): miniredis rejects CLIENT SETINFO, see
	// ExampleNewRedisLock.
	store := redislock.GoZeroStore(zredis.New(mr.Addr(), zredis.WithIdentity()))

	newLock := func() *redislock.RWLock {
		return redislock.NewRWLock(store, "cache:catalog", redislock.WithFencing(), redislock.WithExpiry(5*time.Second))
	}
	ctx := context.Background()
	reader1, reader2, rebuild := newLock(), newLock(), newLock()

	ok1, _ := reader1.RLockCtx(ctx)
	ok2, _ := reader2.RLockCtx(ctx)
	fmt.Println("two readers:", ok1, ok2)
	ok, _ := rebuild.LockCtx(ctx)
	fmt.Println("rebuild beside readers:", ok)

	reader1.RUnlockCtx(ctx)
	reader2.RUnlockCtx(ctx)
	ok, _ = rebuild.LockCtx(ctx)
	fmt.Println("rebuild:", ok, "fence", rebuild.Fence())
	ok, _ = reader1.RLockCtx(ctx)
	fmt.Println("reader during the rebuild:", ok)

	rebuild.UnlockCtx(ctx)
	ok, _ = reader1.RLockCtx(ctx)
	fmt.Println("reader after:", ok, "reads the data of rebuild", reader1.Fence())
	reader1.RUnlockCtx(ctx)
	// Output:
	// two readers: true true
	// rebuild beside readers: false
	// rebuild: true fence 1
	// reader during the rebuild: false
	// reader after: true reads the data of rebuild 1
}

// A writer that waits holds new readers back, so a steady stream of
// readers cannot starve it, and is woken when the last reader leaves.
func ExampleRWLock_LockWaitCtx() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	ctx := context.Background()

	reader := redislock.NewRWLock(client, "cache:catalog", redislock.WithExpiry(5*time.Second))
	rebuild := redislock.NewRWLock(client, "cache:catalog", redislock.WithExpiry(5*time.Second))
	latecomer := redislock.NewRWLock(client, "cache:catalog", redislock.WithExpiry(5*time.Second))
	reader.RLockCtx(ctx)

	done := make(chan bool)
	go func() {
		ok, _ := rebuild.LockWaitCtx(ctx, 10*time.Second)
		done <- ok
	}()
	// Until the rebuild's intent is in place, the latecomer may still get
	// in; once it is, new readers are refused.
	for {
		ok, _ := latecomer.RLockCtx(ctx)
		if !ok {
			break
		}
		latecomer.RUnlockCtx(ctx)
		time.Sleep(time.Millisecond) // the rebuild has not asked yet
	}
	fmt.Println("new reader while the rebuild waits: refused")

	reader.RUnlockCtx(ctx)
	fmt.Println("rebuild after the last reader left:", <-done)
	lockCtx := rebuild.Watch(ctx) // renewed while the rebuild runs under it
	fmt.Println("rebuilding:", lockCtx.Err() == nil)
	rebuild.UnlockCtx(ctx) // wakes every waiting reader
	// Output:
	// new reader while the rebuild waits: refused
	// rebuild after the last reader left: true
	// rebuilding: true
}
