package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkGoZeroParallel compares, on one go-zero store and 25 goroutines
// per CPU on distinct keys, zerolock with go-zero's own RedisLock, in alternating
// rounds so that their ratio holds while the machine drifts. Both send two
// commands per cycle through go-zero's hooks (a span, metrics and the
// breaker on each command, most of either cycle's allocations): go-zero's
// two scripts by EVALSHA; zerolock's SET NX PX and release.lua by EVAL of
// its code (NOSCRIPT is never answered, which go-zero's breaker would
// count). -memprofile shows what is left to each lock; bench/ shows the
// server's side (Redis µs/op).
func BenchmarkGoZeroParallel(b *testing.B) {
	srv := redistest.Start(b)
	zstore := zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
	ctx := context.Background()
	var next atomic.Int64
	for round := 0; round < 3; round++ {
		b.Run("zerolock/round"+strconv.Itoa(round), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(25)
			b.RunParallel(func(pb *testing.PB) {
				lock := redislock.NewRedisLock(zstore, "bench:z:"+strconv.FormatInt(next.Add(1), 10))
				lock.SetExpire(5)
				for pb.Next() {
					cycle(b, ctx, lock)
				}
			})
		})
		b.Run("go-zero/round"+strconv.Itoa(round), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(25)
			b.RunParallel(func(pb *testing.PB) {
				lock := zredis.NewRedisLock(zstore, "bench:g:"+strconv.FormatInt(next.Add(1), 10))
				lock.SetExpire(5)
				for pb.Next() {
					if ok, err := lock.AcquireCtx(ctx); !ok || err != nil {
						b.Errorf("go-zero AcquireCtx() = %v, %v", ok, err)
						return
					}
					if ok, err := lock.ReleaseCtx(ctx); !ok || err != nil {
						b.Errorf("go-zero ReleaseCtx() = %v, %v", ok, err)
						return
					}
				}
			})
		})
	}
}
