package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkNewLockPerCycle measures a cycle as the middleware runs it and
// as ../shared/peerbench does: a new lock per cycle with the default
// options and SetExpire(30), acquired and released, 25 goroutines per CPU
// on distinct keys. Its rows: the floor (SET NX PX, then an EVALSHA
// compare-and-delete, with a token minted per cycle as any lock needs),
// New on the go-redis client, and on go-zero's store NewRedisLock beside
// go-zero's own NewRedisLock, in alternating rounds, each reporting the
// client's and the server's CPU per cycle (see reportCPU). Profile one row
// with -run '^$' -bench 'NewLockPerCycle/zerolock' -cpuprofile.
func BenchmarkNewLockPerCycle(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	admin := srv.Client(b)
	zstore := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	ctx := context.Background()
	if err := floor.Release.Load(ctx, client).Err(); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	rows := []cycleRow{
		{"floor", floorCycle(ctx, client)},
		{"zerolock", newLockCycle(ctx, client)},
		{"drop-in", dropInCycle(ctx, zstore)},
		{"go-zero", goZeroCycle(ctx, zstore)},
	}
	for round := 0; round < 3; round++ {
		for i := range rows {
			row := rows[(i+round)%len(rows)]
			b.Run(row.name+"/round"+strconv.Itoa(round), func(b *testing.B) {
				b.ReportAllocs()
				defer reportCPU(b, admin)()
				runCycles(b, row.name, "bench:n:", &next, row.cycle)
			})
		}
	}
}

// floorCycle is the floor's cycle on client, with a token minted per
// cycle, as any lock must.
func floorCycle(ctx context.Context, client *redis.Client) func(key string) (bool, error) {
	return func(key string) (bool, error) {
		return floor.Cycle(ctx, client, key, redislock.NewToken(), 30e9)
	}
}

// newLockCycle is zerolock's cycle as the middleware runs it: a new lock
// with the default options, acquired and released.
func newLockCycle(ctx context.Context, client *redis.Client) func(key string) (bool, error) {
	return func(key string) (bool, error) {
		l := redislock.New(client, key)
		l.SetExpire(30)
		return acquireRelease(ctx, l.AcquireCtx, l.ReleaseCtx)
	}
}

// dropInCycle is the drop-in's cycle on go-zero's store: NewRedisLock,
// SetExpire(30), acquired and released.
func dropInCycle(ctx context.Context, store *zredis.Redis) func(key string) (bool, error) {
	return func(key string) (bool, error) {
		l := redislock.NewRedisLock(store, key)
		l.SetExpire(30)
		return acquireRelease(ctx, l.AcquireCtx, l.ReleaseCtx)
	}
}

// goZeroCycle is go-zero's own lock's cycle on store, as dropInCycle.
func goZeroCycle(ctx context.Context, store *zredis.Redis) func(key string) (bool, error) {
	return func(key string) (bool, error) {
		l := zredis.NewRedisLock(store, key)
		l.SetExpire(30)
		return acquireRelease(ctx, l.AcquireCtx, l.ReleaseCtx)
	}
}

// runCycles runs cycle from 50 goroutines, each on a key of its own
// (prefix and a number from next), until b.N cycles are done.
func runCycles(b *testing.B, name, prefix string, next *atomic.Int64, cycle func(key string) (bool, error)) {
	b.SetParallelism(25)
	b.RunParallel(func(pb *testing.PB) {
		key := prefix + strconv.FormatInt(next.Add(1), 10)
		for pb.Next() {
			if ok, err := cycle(key); !ok || err != nil {
				b.Errorf("%s cycle = %v, %v", name, ok, err)
				return
			}
		}
	})
}

// acquireRelease acquires and, when it got the lock, releases it.
func acquireRelease(ctx context.Context, acquire, release func(context.Context) (bool, error)) (bool, error) {
	ok, err := acquire(ctx)
	if !ok || err != nil {
		return ok, err
	}
	return release(ctx)
}
