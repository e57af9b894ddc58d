package interceptor_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/metadata"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/redistest"
	"github.com/zerolock/zerolock/internal/testpb"
)

// floorRelease is the raw floor's compare-and-delete.
var floorRelease = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// floorPayments does in its Refund handler what the interceptor does
// around Pay: SET NX PX, then the compare-and-delete, on one go-redis client.
type floorPayments struct {
	testpb.UnimplementedPaymentsServer
	redis *redis.Client
}

func (floorPayments) Pay(context.Context, *testpb.PayRequest) (*testpb.PayReply, error) {
	return &testpb.PayReply{Status: "paid"}, nil
}

func (p floorPayments) Refund(ctx context.Context, req *testpb.PayRequest) (*testpb.PayReply, error) {
	key := "bench:floor:" + req.GetOrder().GetId()
	if err := p.redis.SetArgs(ctx, key, "token", redis.SetArgs{Mode: "NX", TTL: 10e9}).Err(); err != nil {
		return nil, err
	}
	if err := floorRelease.EvalSha(ctx, p.redis, []string{key}, "token").Err(); err != nil {
		return nil, err
	}
	return &testpb.PayReply{Status: "refunded"}, nil
}

// BenchmarkUnary compares a call through the interceptor (Pay, keyed by
// order id and user) with one whose handler does the raw floor itself
// (Refund), on one in-process gRPC server, 50 concurrent clients per run
// on 2 CPUs, distinct orders. The ratio of the two is what make bench
// reports; this benchmark is the one to profile:
//
//	go test -run '^$' -bench 'Unary/interceptor' -cpuprofile cpu.out ./interceptor
//	go tool pprof -top -focus zerolock/interceptor cpu.out
func BenchmarkUnary(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	if err := floorRelease.Load(context.Background(), rdb).Err(); err != nil {
		b.Fatal(err)
	}
	lock, err := interceptor.UnaryServerInterceptorWithStore(interceptor.LockConf{Rules: []interceptor.LockRule{{
		Method: "/zerolock.test.Payments/Pay", Keys: []string{"field:order.id", "metadata:x-user"},
	}}}, rdb)
	if err != nil {
		b.Fatal(err)
	}
	client := serveWith(b, lock, floorPayments{redis: rdb})
	calls := map[string]func(context.Context, *testpb.PayRequest) error{
		"floor": func(ctx context.Context, req *testpb.PayRequest) error {
			_, err := client.Refund(ctx, req)
			return err
		},
		"interceptor": func(ctx context.Context, req *testpb.PayRequest) error {
			_, err := client.Pay(ctx, req)
			return err
		},
	}
	var next atomic.Int64
	for _, name := range []string{"floor", "interceptor"} {
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
