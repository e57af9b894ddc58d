package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkFloorParallel compares, at 25 goroutines per CPU on distinct
// keys, the raw floor (SET NX PX + an EVALSHA compare-and-delete on
// go-redis) with zerolock on the same client, default options and
// WithoutWakeups, in alternating rounds, each reporting the CPU it cost
// this process and the Redis server per cycle (see reportCPU).
func BenchmarkFloorParallel(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	admin := srv.Client(b)
	ctx := context.Background()
	if err := floor.Release.Load(ctx, client).Err(); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	for round := 0; round < 3; round++ {
		b.Run("floor/round"+strconv.Itoa(round), func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, admin)()
			b.SetParallelism(25)
			b.RunParallel(func(pb *testing.PB) {
				key := "bench:f:" + strconv.FormatInt(next.Add(1), 10)
				token := "tok-" + key
				for pb.Next() {
					floor.Cycle(ctx, client, key, token, 5*time.Second)
				}
			})
		})
		for _, tc := range []struct {
			name string
			opts []redislock.Option
		}{{"default", nil}, {"quiet", []redislock.Option{redislock.WithoutWakeups()}}} {
			b.Run(tc.name+"/round"+strconv.Itoa(round), func(b *testing.B) {
				b.ReportAllocs()
				defer reportCPU(b, admin)()
				b.SetParallelism(25)
				b.RunParallel(func(pb *testing.PB) {
					lock := redislock.New(client, "bench:d:"+strconv.FormatInt(next.Add(1), 10), tc.opts...)
					lock.SetExpire(5)
					for pb.Next() {
						cycle(b, ctx, lock)
					}
				})
			})
		}
	}
}
