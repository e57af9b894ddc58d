package interceptor_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/metadata"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkUnary compares a call through the interceptor (Pay, keyed by
// order id and user) with one whose handler does the raw floor itself
// (Refund), on one in-process gRPC server, 50 concurrent clients per run
// on 2 CPUs, distinct orders. The ratio of the two is what make bench
// reports (with the same rule with DisableRenew, renewal off, beside it);
// this benchmark is the one to profile:
//
//	go test -run '^$' -bench 'Unary/interceptor' -cpuprofile cpu.out ./interceptor
//	go tool pprof -top -focus zerolock/interceptor cpu.out
func BenchmarkUnary(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	if err := floor.Release.Load(context.Background(), rdb).Err(); err != nil {
		b.Fatal(err)
	}
	lock, err := interceptor.UnaryServerInterceptorWithBackend(interceptor.LockConf{Rules: []interceptor.LockRule{{
		Method: "/zerolock.test.Payments/Pay", Keys: []string{"field:order.id", "metadata:x-user"},
	}}}, redislock.NewBackend(rdb, redislock.WithoutWakeups()))
	if err != nil {
		b.Fatal(err)
	}
	client := serveWith(b, lock, floor.Payments{Redis: rdb, Prefix: "bench:floor:", TTL: 10 * time.Second})
	noRenew, err := interceptor.UnaryServerInterceptorWithBackend(interceptor.LockConf{DisableRenew: true, Rules: []interceptor.LockRule{{
		Method: "/zerolock.test.Payments/Pay", Keys: []string{"field:order.id", "metadata:x-user"},
	}}}, redislock.NewBackend(rdb, redislock.WithoutWakeups()))
	if err != nil {
		b.Fatal(err)
	}
	noRenewClient := serveWith(b, noRenew, floor.Payments{Redis: rdb, Prefix: "bench:floor:", TTL: 10 * time.Second})
	calls := map[string]func(context.Context, *testpb.PayRequest) error{
		"floor": func(ctx context.Context, req *testpb.PayRequest) error {
			_, err := client.Refund(ctx, req)
			return err
		},
		"interceptor": func(ctx context.Context, req *testpb.PayRequest) error {
			_, err := client.Pay(ctx, req)
			return err
		},
		"interceptor-DisableRenew": func(ctx context.Context, req *testpb.PayRequest) error {
			_, err := noRenewClient.Pay(ctx, req)
			return err
		},
	}
	var next atomic.Int64
	for _, name := range []string{"floor", "interceptor", "interceptor-DisableRenew"} {
		call := calls[name]
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(25)
			b.RunParallel(func(pb *testing.PB) {
				ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user", "bench")
				for pb.Next() {
					id := strconv.FormatInt(next.Add(1), 10)
					if err := call(ctx, &testpb.PayRequest{Order: &testpb.Order{Id: id}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
