package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkGoZeroParallel compares, on one go-zero store and 25 goroutines
// per CPU on distinct keys, zerolock with go-zero's own RedisLock, in alternating
// rounds so that their ratio holds while the machine drifts. Both send two
// commands per cycle through go-zero's hooks (a span, metrics and the
// breaker on each command, most of either cycle's allocations): go-zero's
// two scripts by EVALSHA; zerolock's SET NX PX and release.lua, by EVALSHA
// once the server holds it (see internal/gozero). Each reports, besides time and allocations, the CPU it cost
// this process (client-µs/op: user and system time, go-zero's client
// included) and the Redis server (redis-µs/op: INFO cpu). -memprofile
// shows what is left to each lock.
func BenchmarkGoZeroParallel(b *testing.B) {
	srv := redistest.Start(b)
	zstore := zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
	admin := srv.Client(b)
	ctx := context.Background()
	var next atomic.Int64
	for round := 0; round < 3; round++ {
		b.Run("zerolock/round"+strconv.Itoa(round), func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, admin)()
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
			defer reportCPU(b, admin)()
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

// reportCPU starts measuring the CPU of this process and of the Redis
// server behind admin; the function it returns reports both per operation.
func reportCPU(b *testing.B, admin *redis.Client) func() {
	client, server := processCPU(b), serverCPU(b, admin)
	return func() {
		if b.N == 0 {
			return
		}
		n := float64(b.N)
		b.ReportMetric(float64((processCPU(b)-client).Microseconds())/n, "client-µs/op")
		b.ReportMetric(float64((serverCPU(b, admin)-server).Microseconds())/n, "redis-µs/op")
	}
}

// processCPU is the user and system time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the Redis server's user and system time so far (INFO cpu).
func serverCPU(b *testing.B, admin *redis.Client) time.Duration {
	info, err := admin.InfoMap(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, field := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(info["CPU"][field], 64)
		if err != nil {
			b.Fatalf("INFO cpu %s: %v", field, err)
		}
		total += v
	}
	return time.Duration(total * float64(time.Second))
}
