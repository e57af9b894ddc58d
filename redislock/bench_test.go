package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	zprom "github.com/zeromicro/go-zero/core/prometheus"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/observe"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkAcquireRelease measures one acquire + release cycle on a real
// redis-server through each store, beside the raw floor (SET NX PX and an
// EVALSHA compare-and-delete on the same go-redis client). Run it with
// -benchmem to see allocations per cycle.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	zstore := zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
	ctx := context.Background()
	if err := floor.Release.Load(ctx, client).Err(); err != nil {
		b.Fatal(err)
	}

	b.Run("floor", func(b *testing.B) {
		// Key and token are variables, as in any lock: a constant string
		// would spare the floor the allocations of boxing them.
		key, token := "bench:floor", "token-"+strconv.Itoa(b.N)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if ok, err := floor.Cycle(ctx, client, key, token, 5500*time.Millisecond); !ok || err != nil {
				b.Fatalf("floor cycle: %v, %v", ok, err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		lock *redislock.RedisLock
	}{
		{"go-redis", redislock.New(client, "bench:go-redis")},
		{"go-zero", redislock.NewRedisLock(zstore, "bench:go-zero")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tc.lock.SetExpire(5)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				cycle(b, ctx, tc.lock)
			}
		})
	}
	// Distinct keys from many goroutines: the scenario of a service locking
	// one resource per request.
	var next atomic.Int64
	b.Run("go-redis-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			lock := redislock.New(client, "bench:p:"+strconv.FormatInt(next.Add(1), 10))
			lock.SetExpire(5)
			for pb.Next() {
				cycle(b, ctx, lock)
			}
		})
	})
}

func cycle(b *testing.B, ctx context.Context, lock *redislock.RedisLock) {
	if ok, err := lock.AcquireCtx(ctx); !ok || err != nil {
		b.Fatalf("AcquireCtx() = %v, %v", ok, err)
	}
	if ok, err := lock.ReleaseCtx(ctx); !ok || err != nil {
		b.Fatalf("ReleaseCtx() = %v, %v", ok, err)
	}
}

// BenchmarkContendedTryLock: goroutines try one key at once (SET NX; on
// success, release), the floor beside zerolock; profile it with
// -cpuprofile to see the client's share of a contended try.
func BenchmarkContendedTryLock(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	ctx := context.Background()
	if err := floor.Release.Load(ctx, client).Err(); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.Run("floor", func(b *testing.B) {
		b.SetParallelism(25)
		b.RunParallel(func(pb *testing.PB) {
			token := "t" + strconv.FormatInt(next.Add(1), 10)
			for pb.Next() {
				_, _ = floor.Cycle(ctx, client, "bench:contended:floor", token, 5*time.Second)
			}
		})
	})
	b.Run("zerolock", func(b *testing.B) {
		b.SetParallelism(25)
		b.RunParallel(func(pb *testing.PB) {
			lock := redislock.New(client, "bench:contended:zerolock", redislock.WithExpiry(5*time.Second))
			for pb.Next() {
				if ok, _ := lock.AcquireCtx(ctx); ok {
					_, _ = lock.ReleaseCtx(ctx)
				}
			}
		})
	})
}

// BenchmarkObservedCycle measures the go-redis cycle of BenchmarkAcquireRelease
// with the lock metrics (package observe) off and on, and traced: under a
// recording parent span, where each acquire starts its own span. With
// metrics on and no recording span the cycle must allocate what it does
// with them off (and what BenchmarkAcquireRelease/go-redis did before the
// locks were observed): the instruments are bound once per lock name.
// It enables go-zero's Prometheus flag, which stays on for the process.
func BenchmarkObservedCycle(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	zprom.Enable()
	defer observe.SetMetrics(true)
	defer observe.SetTracing(true)

	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	traced, request := tp.Tracer("bench").Start(context.Background(), "request")
	defer request.End()

	for _, tc := range []struct {
		name             string
		metrics, tracing bool
		ctx              context.Context
	}{
		{"off", false, false, context.Background()},
		{"metrics", true, true, context.Background()},
		{"metrics-tracing-off", true, false, traced},
		{"metrics-traced", true, true, traced},
	} {
		b.Run(tc.name, func(b *testing.B) {
			observe.SetMetrics(tc.metrics)
			observe.SetTracing(tc.tracing)
			lock := redislock.New(client, "bench:observed:"+tc.name,
				redislock.WithName("BenchmarkObservedCycle"), redislock.WithExpiry(5*time.Second))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				cycle(b, tc.ctx, lock)
			}
		})
	}
}
