package redislock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock"
)

// Cap concurrent exports per user at 2: a third export of the same user is
// refused until one of the first two ends (or its permit expires, if its
// process died).
func ExampleSemaphore() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	// A go-zero store, as in ExampleNewRedisLock; go-redis users pass their
	// client instead of redislock.GoZeroStore(store).
	store := zredis.New(mr.Addr(), zredis.WithIdentity())

	export := func() *redislock.Semaphore {
		// A permit lasts a minute unless released or watched.
		s, err := redislock.NewSemaphore(redislock.GoZeroStore(store), "export:user-7", 2, redislock.WithExpiry(time.Minute))
		if err != nil {
			panic(err) // only for permits < 1
		}
		return s
	}
	ctx := context.Background()
	first, second, third := export(), export(), export()
	for _, s := range []*redislock.Semaphore{first, second, third} {
		ok, err := s.AcquireCtx(ctx)
		fmt.Println("export may start:", ok, err)
	}

	ok, err := first.ReleaseCtx(ctx)
	fmt.Println("first done:", ok, err)
	ok, err = third.AcquireCtx(ctx)
	fmt.Println("third may start:", ok, err)
	// Output:
	// export may start: true <nil>
	// export may start: true <nil>
	// export may start: false <nil>
	// first done: true <nil>
	// third may start: true <nil>
}
